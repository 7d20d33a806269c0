//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// The scenarios of `make test`: 3 nodes, kill, pause and partition. Each
// ends with the checker over the whole history; see README.md.

// TestKill3: SIGKILL of the leader, of a random node, of a majority, of
// all nodes (restarted on their data), and of the leader right after it
// dispatched a slot (its runs become orphans the next leader re-dispatches).
func TestKill3(t *testing.T) {
	s := newScenario(t, "kill3", scenarioOptions{nodes: 3, expect: Expect{LeaderChanges: 3}})
	s.run(4 * time.Second)
	s.killLeader(3 * time.Second)
	s.run(3 * time.Second)
	s.killRandom(3 * time.Second)
	s.run(3 * time.Second)
	s.killMajority(4 * time.Second)
	s.run(3 * time.Second)
	s.killAll(3 * time.Second)
	s.run(4 * time.Second)
	alignToSlot(2, 50*time.Millisecond)
	s.killLeader(3 * time.Second)
	s.run(3 * time.Second)
	s.finish("")
}

// TestPause3: SIGSTOP of the leader past the election timeout, plain and
// right after it committed a run (the pause-after-commit failpoint holds
// the attempt between commit and dispatch); the held attempt then reaches
// the sink stale and must be refused. A run without a stale attempt is
// inconclusive.
func TestPause3(t *testing.T) {
	s := newScenario(t, "pause3", scenarioOptions{nodes: 3, holdDirs: true,
		expect: Expect{LeaderChanges: 2, StaleAttempts: 1}})
	s.run(4 * time.Second)
	alignToSlot(2, 50*time.Millisecond)
	s.pauseLeader(3 * time.Second)
	s.run(3 * time.Second)
	s.pauseAfterCommit()
	s.run(3 * time.Second)
	s.pauseLeader(3 * time.Second)
	s.run(3 * time.Second)
	s.finish("")
}

// TestPartition3: the leader isolated (with a FireBatch in flight), a
// minority split off, a bridge a-b-c with a and c cut off from each
// other, and a one-way cut from the leader. Root: network namespaces;
// otherwise per-link proxies (the log says which).
func TestPartition3(t *testing.T) {
	s := newScenario(t, "partition3", scenarioOptions{nodes: 3, expect: Expect{LeaderChanges: 1}})
	s.run(4 * time.Second)
	s.isolateLeader(4 * time.Second)
	s.run(3 * time.Second)
	s.splitHalves(4 * time.Second)
	s.run(3 * time.Second)
	s.bridge(5 * time.Second)
	s.run(3 * time.Second)
	s.oneWayFromLeader(4 * time.Second)
	s.run(3 * time.Second)
	s.finish("")
}
