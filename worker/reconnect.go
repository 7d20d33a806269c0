package worker

import "time"

// reconnect decides where a worker dials next and how long it waits
// first. It is a pure policy: Run does the dialing and the waiting.
//
// A NOT_LEADER answer naming another node comes from a live node that
// knows who leads: the worker dials that node at once, without waiting
// out its backoff, so that after a failover it reaches the new leader as
// soon as any node knows of it, however long it had been failing before.
// It follows one such answer at once, not a chain of them: a hint may be
// stale (the old leader, dead) and two nodes may point at each other
// during an election, and neither must make the worker spin.
type reconnect struct {
	addrs    []string
	min, max time.Duration
	backoff  time.Duration
	next     int
	// redirect is the leader the last answer named, dialled next.
	redirect string
	// followed: the last dial was to a leader named by the answer before.
	followed bool
}

func newReconnect(addrs []string, min, max time.Duration) *reconnect {
	return &reconnect{addrs: addrs, min: min, max: max, backoff: min}
}

// addr is the address to dial next: the leader named by the last answer,
// or else the next configured address in turn.
func (r *reconnect) addr() string {
	if a := r.redirect; a != "" {
		r.redirect = ""
		return a
	}
	a := r.addrs[r.next%len(r.addrs)]
	r.next++
	return a
}

// after takes how the session with addr ended (leader: the leader its
// NOT_LEADER answer named, or ""; lasted: how long it was up) and returns
// how long to wait before the next dial.
func (r *reconnect) after(addr, leader string, lasted time.Duration) time.Duration {
	if lasted > r.max {
		r.backoff = r.min // it had been working: start over
	}
	if leader != "" && leader != addr {
		r.redirect = leader
		if !r.followed {
			r.followed = true
			return 0
		}
	}
	r.followed = false
	wait := r.backoff
	r.backoff = min(2*r.backoff, r.max)
	return wait
}
