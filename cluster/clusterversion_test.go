package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
)

// withClusterVersion runs each node on a real FSM whose cluster version the
// leader raises, the node of the ID applying command version versions[ID]
// (1 when not listed).
func withClusterVersion(states map[string]*fsm.FSM, versions map[string]uint32) nodeOpts {
	return func(c *Config) {
		f := fsm.New()
		states[c.ID] = f
		c.FSM = f
		c.VersionOf = fsm.VersionOf
		c.CommandVersion = versions[c.ID]
		c.ClusterVersion = f.ClusterVersion
		c.RaiseClusterVersion = fsm.SetClusterVersion
	}
}

func waitClusterVersion(t *testing.T, tc *testCluster, states map[string]*fsm.FSM, want uint32) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, fmt.Sprintf("cluster version %d on every node", want), func() bool {
		for _, tn := range tc.running() {
			if states[tn.id].ClusterVersion() != want || tn.node.Status().GetClusterVersion() != want {
				return false
			}
		}
		return true
	})
}

// A cluster of one release raises the cluster version at its first
// election.
func TestFreshClusterRaisesItsVersion(t *testing.T) {
	states := map[string]*fsm.FSM{}
	all := map[string]uint32{"n1": fsm.CommandVersion, "n2": fsm.CommandVersion, "n3": fsm.CommandVersion}
	tc := newCluster(t, 3, withClusterVersion(states, all))
	tc.waitLeader(10 * time.Second)
	waitClusterVersion(t, tc, states, fsm.CommandVersion)
}

// During a rolling upgrade the version stays while one voter runs the
// older release; once it is upgraded, the leader raises it.
func TestClusterVersionWaitsForTheLastVoter(t *testing.T) {
	states := map[string]*fsm.FSM{}
	newer := map[string]uint32{"n1": fsm.CommandVersion, "n2": fsm.CommandVersion}
	tc := newCluster(t, 3, withClusterVersion(states, newer))
	leader := tc.waitLeader(10 * time.Second)
	old := tc.byID("n3")
	if leader == old {
		if _, err := leader.node.TransferLeadership(ctxTimeout(t, 10*time.Second), ""); err != nil {
			t.Fatalf("transfer leadership away from n3: %v", err)
		}
		leader = tc.waitLeader(10 * time.Second)
	}
	// The leader tried, and learned that n3 applies version 1.
	testutil.WaitFor(t, 10*time.Second, "the leader asking n3 its version", func() bool {
		leader.node.versions.mu.Lock()
		defer leader.node.versions.mu.Unlock()
		seen, ok := leader.node.versions.seen["n3"]
		return ok && seen.version == 1
	})
	for _, tn := range tc.nodes {
		readBarrier(t, tn.node)
		if v := states[tn.id].ClusterVersion(); v != 1 {
			t.Fatalf("%s is at cluster version %d while n3 runs version 1", tn.id, v)
		}
	}

	peers := peersOf(tc)
	old.stop()
	up := startNode(t, "n3", old.dir, listen(t, old.addr), func(c *Config) { c.Peers = peers },
		withClusterVersion(states, map[string]uint32{"n3": fsm.CommandVersion}))
	tc.nodes[2] = up
	waitClusterVersion(t, tc, states, fsm.CommandVersion)
}
