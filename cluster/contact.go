package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Contact values of a server in Status: whether the answering node hears
// from it. Only the leader hears from every server (its heartbeats); a
// follower knows itself and the leader, and leaves the others unknown ("").
const (
	ContactReachable   = "reachable"
	ContactUnreachable = "unreachable"
)

// contactBuffer holds the observations not yet noted. Raft drops one that
// finds it full rather than wait; a few per peer and heartbeat interval
// arrive while a peer is down, so this is far more than ever waits.
const contactBuffer = 256

// contacts tracks, on the leader, the peers whose heartbeats fail. Raft
// keeps each follower's last contact to itself (v1.7.3 exposes no
// per-peer figure), but tells observers when a heartbeat to a peer fails,
// with the peer's last contact, and when heartbeats resume.
type contacts struct {
	obs chan raft.Observation

	mu sync.Mutex // guards failing
	// failing maps a peer whose heartbeats fail to its last contact.
	failing map[raft.ServerID]time.Time
}

func newContacts() *contacts {
	return &contacts{obs: make(chan raft.Observation, contactBuffer), failing: map[raft.ServerID]time.Time{}}
}

// observer is the Raft observer that feeds c; it never blocks Raft.
func (c *contacts) observer() *raft.Observer {
	return raft.NewObserver(c.obs, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.PeerObservation:
			return true
		}
		return false
	})
}

// run notes the observations until stop is closed.
func (c *contacts) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case o := <-c.obs:
			c.note(o.Data)
		case <-stop:
			return
		}
	}
}

func (c *contacts) note(data any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch d := data.(type) {
	case raft.FailedHeartbeatObservation:
		c.failing[d.PeerID] = d.LastContact
	case raft.ResumedHeartbeatObservation:
		delete(c.failing, d.PeerID)
	case raft.PeerObservation:
		// Added again or removed: its heartbeats start over, if at all.
		delete(c.failing, d.Peer.ID)
	}
}

// reset forgets every peer: a new term starts its heartbeats afresh.
func (c *contacts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.failing)
}

// lastContact is the last contact of peer id if its heartbeats fail.
func (c *contacts) lastContact(id raft.ServerID) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.failing[id]
	return at, ok
}

// contact is what this node knows of its contact with server id at now,
// and the last contact when it is unreachable: a server is unreachable
// once its last contact is older than the election timeout, the silence
// after which a follower would stand for election itself.
func (n *Node) contact(id raft.ServerID, leaderID string, now time.Time) (string, time.Time) {
	var last time.Time
	switch {
	case string(id) == n.cfg.ID:
		return ContactReachable, time.Time{}
	case n.IsLeader():
		at, failing := n.contacts.lastContact(id)
		if !failing {
			return ContactReachable, time.Time{}
		}
		last = at
	case string(id) == leaderID:
		last = n.raft.LastContact()
	default:
		return "", time.Time{}
	}
	if now.Sub(last) <= n.rc.ElectionTimeout {
		return ContactReachable, time.Time{}
	}
	return ContactUnreachable, last
}
