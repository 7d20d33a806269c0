package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// A follower notices a dead leader only when its heartbeat timer, a random
// value between HeartbeatTimeout and twice that and re-armed while the
// leader was heard within HeartbeatTimeout, fires: 1 to 3 heartbeat
// timeouts after the last contact. When the leader's process has crashed
// but its host is up, the host answers a connection to the leader's port
// with a refusal at once, and waiting out the timer proves nothing more.
//
// crashWatch turns that refusal into an early election. On a follower whose
// leader has been silent for LeaderLeaseTimeout — the point at which a live
// leader cut off from its quorum steps down by itself — it dials the
// leader's address. Only a refused connection counts: a timeout, a reset or
// an accepted connection (a paused or partitioned process, an overloaded
// host) leaves Raft's timers alone. On a refusal it lowers the reloadable
// HeartbeatTimeout and ElectionTimeout to LeaderLeaseTimeout, which makes
// Raft's follower loop re-check at once and start a (pre-)vote, and puts
// them back once a leader is known again or after crashWatchRestore.
//
// Only timing changes: who may win an election, and what it may commit,
// is Raft's as always. A false alarm costs an election that Raft's pre-vote
// refuses while the other voters still hear the leader.
const (
	crashWatchPoll    = 25 * time.Millisecond
	crashWatchDial    = 100 * time.Millisecond
	crashWatchRestore = 10 * time.Second
)

// watchCrash runs until stop is closed. It sleeps until the leader could
// first count as silent, its last contact plus the lease, and polls every
// crashWatchPoll only while it is: a fixed poll would wake every node 40
// times a second, idle or not, and those wake-ups were most of an idle
// node's CPU. A leader only becomes known to a follower together with a
// contact from it, so a follower that learns of one in the middle of a
// sleep of at most the lease cannot see it fall silent before it wakes.
// The leader itself has no leader to watch: it sleeps until it is deposed.
func (n *Node) watchCrash(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(n.lease)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-n.deposed:
		case <-t.C:
			if addr, ok := n.silentLeader(); ok && leaderRefuses(addr) {
				n.hurryElection(stop, addr)
			}
		}
		if n.IsLeader() {
			t.Stop()
			n.crashWatchAsleep.Store(true)
			continue
		}
		n.crashWatchAsleep.Store(false)
		t.Reset(crashWatchWait(n.raft.State() == raft.Follower, time.Since(n.raft.LastContact()), n.lease))
	}
}

// crashWatchWait is how long the watch sleeps: until the lease runs out
// after the last contact (sinceContact ago) on a follower, crashWatchPoll
// once it has, and the lease on a candidate (or a leader Raft has not
// announced yet).
func crashWatchWait(follower bool, sinceContact, lease time.Duration) time.Duration {
	switch {
	case !follower:
		return lease
	case sinceContact >= lease:
		return crashWatchPoll
	}
	return lease - sinceContact
}

// silentLeader returns the address of the leader this follower still
// believes in, if it has not been heard from for the lease timeout.
func (n *Node) silentLeader() (raft.ServerAddress, bool) {
	if n.raft.State() != raft.Follower {
		return "", false
	}
	addr, _ := n.raft.LeaderWithID()
	if addr == "" || time.Since(n.raft.LastContact()) < n.lease {
		return "", false
	}
	return addr, true
}

// leaderRefuses reports whether a connection to addr is refused: nothing
// listens there, so the leader's process is gone.
func leaderRefuses(addr raft.ServerAddress) bool {
	ctx, cancel := context.WithTimeout(context.Background(), crashWatchDial)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", string(addr))
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// hurryElection shortens Raft's follower and candidate timers to the lease
// timeout until a leader is known again, then restores them. A small random
// delay first keeps the followers, which all see the refusal within one
// poll, from splitting the vote.
func (n *Node) hurryElection(stop <-chan struct{}, dead raft.ServerAddress) {
	orig := n.raft.ReloadableConfig()
	fast := orig
	fast.HeartbeatTimeout = n.lease
	fast.ElectionTimeout = n.lease
	if fast.HeartbeatTimeout >= orig.HeartbeatTimeout {
		return // the lease equals the heartbeat timeout: nothing to shorten
	}
	if !sleepOrStop(stop, rand.N(2*crashWatchPoll)) {
		return
	}
	if addr, _ := n.raft.LeaderWithID(); addr != dead {
		return // someone else's election already moved on
	}
	n.log.Warn("leader's address refuses connections: starting an election early",
		"leader_addr", dead, "silent_for", time.Since(n.raft.LastContact()).Round(time.Millisecond))
	if err := n.raft.ReloadConfig(fast); err != nil {
		n.log.Warn("early election: shorten raft timers", "error", err)
		return
	}
	n.earlyElections.Add(1)
	defer func() {
		if err := n.raft.ReloadConfig(orig); err != nil {
			n.log.Error("early election: restore raft timers", "error", err)
		}
	}()
	deadline := time.Now().Add(crashWatchRestore)
	for time.Now().Before(deadline) {
		if addr, _ := n.raft.LeaderWithID(); addr != "" && addr != dead {
			return
		}
		if !sleepOrStop(stop, crashWatchPoll) {
			return
		}
	}
}

func sleepOrStop(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
