package worker

import (
	"testing"
	"time"
)

const (
	minWait = 100 * time.Millisecond
	maxWait = 5 * time.Second
)

// fail makes the dial to the next address fail plainly n times and
// returns the last wait.
func fail(rc *reconnect, n int) time.Duration {
	var wait time.Duration
	for range n {
		wait = rc.after(rc.addr(), "", 0)
	}
	return wait
}

// A worker that has backed off to the maximum still goes to the leader a
// node names at once: after a failover the nodes know the new leader long
// before a maximal backoff runs out.
func TestReconnectFollowsANamedLeaderAtOnce(t *testing.T) {
	t.Parallel()
	rc := newReconnect([]string{"n1", "n2", "n3"}, minWait, maxWait)
	if wait := fail(rc, 10); wait != maxWait {
		t.Fatalf("after 10 failures the wait is %s, want the maximum %s", wait, maxWait)
	}
	from := rc.addr()
	if wait := rc.after(from, "n3", 0); wait != 0 {
		t.Fatalf("%s named the leader n3; wait %s before dialling it, want none", from, wait)
	}
	if got := rc.addr(); got != "n3" {
		t.Fatalf("dialled %s next, want the named leader n3", got)
	}
}

// A stale answer (the old leader, dead) is followed once at once; when
// that dial fails the worker backs off and goes on with its addresses.
func TestReconnectBacksOffAfterAStaleLeader(t *testing.T) {
	t.Parallel()
	rc := newReconnect([]string{"n1", "n2", "n3"}, minWait, maxWait)
	fail(rc, 1) // n1: the leader, killed
	if wait := rc.after(rc.addr(), "n1", 0); wait != 0 {
		t.Fatalf("n2 named n1: wait %s, want none", wait)
	}
	if got := rc.addr(); got != "n1" {
		t.Fatalf("dialled %s, want n1", got)
	}
	if wait := rc.after("n1", "", 0); wait != 2*minWait {
		t.Fatalf("n1 refused again: wait %s, want the doubled backoff %s", wait, 2*minWait)
	}
	if got := rc.addr(); got != "n3" {
		t.Fatalf("dialled %s, want n3, the next configured address", got)
	}
}

// Two nodes naming each other (an election under way) do not make the
// worker spin: it follows at once only every other answer.
func TestReconnectBacksOffInARedirectLoop(t *testing.T) {
	t.Parallel()
	rc := newReconnect([]string{"n1", "n2"}, minWait, maxWait)
	var waits []time.Duration
	for range 6 {
		addr := rc.addr()
		other := map[string]string{"n1": "n2", "n2": "n1"}[addr]
		waits = append(waits, rc.after(addr, other, 0))
	}
	want := []time.Duration{0, minWait, 0, 2 * minWait, 0, 4 * minWait}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
}

// A session that had been up longer than the maximum backoff starts the
// backoff over.
func TestReconnectStartsOverAfterAWorkingSession(t *testing.T) {
	t.Parallel()
	rc := newReconnect([]string{"n1"}, minWait, maxWait)
	fail(rc, 10)
	if wait := rc.after(rc.addr(), "", 2*maxWait); wait != minWait {
		t.Fatalf("after a session of %s the wait is %s, want %s", 2*maxWait, wait, minWait)
	}
}
