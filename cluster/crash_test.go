package cluster

import (
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// slowHeartbeat makes Raft's own failure detection slow (a follower cannot
// campaign before 3 s of silence) while the lease stays short, so that only
// the crash watch can elect a new leader sooner.
func slowHeartbeat(c *Config) {
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, 200*time.Millisecond
}

// A leader whose port refuses connections is replaced before any
// follower's heartbeat timer could have fired.
func TestCrashedLeaderReplacedBeforeHeartbeatTimeout(t *testing.T) {
	tc := newCluster(t, 3, slowHeartbeat)
	old := tc.waitLeader(20 * time.Second)
	put(t, old.node, "before", "@daily")

	start := time.Now()
	old.crash() // raft stopped without a transfer, then the port closed
	leader := tc.waitLeader(10 * time.Second)
	took := time.Since(start)
	t.Logf("new leader %s after %s", leader.id, took)
	if took >= 3*time.Second {
		t.Fatalf("new leader after %s: no earlier than Raft's 3s heartbeat timeout, so the crash watch did not act", took)
	}
	early := uint64(0)
	for _, tn := range tc.running() {
		early += tn.node.earlyElections.Load()
	}
	if early == 0 {
		t.Fatal("no follower recorded an early election")
	}
	put(t, leader.node, "after", "@daily")
}

// A leader cut off from the network still accepts connections at its
// address (here its mux closes them after accepting): that is not a crash,
// and the followers wait for Raft's own timeout.
func TestIsolatedLeaderIsNotTakenForCrashed(t *testing.T) {
	tc, isos := newIsolatableCluster(t, 3, slowHeartbeat)
	old := tc.waitLeader(20 * time.Second)
	for i, tn := range tc.nodes {
		if tn == old {
			isos[i].Cut()
		}
	}
	rest := tc.followers(old)
	leader := leaderAmong(t, rest, 20*time.Second)
	for _, tn := range rest {
		if n := tn.node.earlyElections.Load(); n != 0 {
			t.Fatalf("%s started %d early elections against a live, isolated leader", tn.id, n)
		}
	}
	t.Logf("new leader %s by Raft's own timeout", leader.id)
}

// The watch sleeps until the leader could first count as silent, polls
// while it does, and checks a candidate once per lease.
func TestCrashWatchWaitsForTheLease(t *testing.T) {
	const lease = 500 * time.Millisecond
	for _, c := range []struct {
		name         string
		follower     bool
		sinceContact time.Duration
		want         time.Duration
	}{
		{"heard just now", true, 0, lease},
		{"heard 400ms ago", true, 400 * time.Millisecond, 100 * time.Millisecond},
		{"silent for the lease", true, lease, crashWatchPoll},
		{"silent for longer", true, 3 * time.Second, crashWatchPoll},
		{"candidate", false, 3 * time.Second, lease},
	} {
		if got := crashWatchWait(c.follower, c.sinceContact, lease); got != c.want {
			t.Errorf("%s: wait %s, want %s", c.name, got, c.want)
		}
	}
}

// A leader's watch sleeps, and wakes when the leader is deposed: the next
// leader's crash is caught by the node that led before it. With the third
// node down, the deposed leader is the only one left to catch it.
func TestDeposedLeaderWatchesTheNextOne(t *testing.T) {
	tc := newCluster(t, 3, slowHeartbeat)
	old := tc.waitLeader(20 * time.Second)
	put(t, old.node, "before", "@daily")
	rest := tc.followers(old)
	next, third := rest[0], rest[1]
	third.crash()
	testutil.WaitFor(t, 5*time.Second, "the leader's watch asleep", old.node.crashWatchAsleep.Load)

	if _, err := old.node.TransferLeadership(ctxTimeout(t, 10*time.Second), next.id); err != nil {
		t.Fatalf("transfer to %s: %v", next.id, err)
	}
	leaderAmong(t, []*testNode{old, next}, 10*time.Second)
	next.crash()
	testutil.WaitFor(t, 5*time.Second, old.id+"'s early election against the crashed "+next.id, func() bool {
		return old.node.earlyElections.Load() > 0
	})
}
