//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// The long suite (make e2e-long): 5 nodes, membership changes, clock
// skew and a longer run of random faults. Every fault stays well inside
// the catch-up window.

// TestLongKill5: the kill scenario on 5 nodes (a majority is 3).
func TestLongKill5(t *testing.T) {
	s := newScenario(t, "kill5", scenarioOptions{nodes: 5, expect: Expect{LeaderChanges: 3}})
	s.run(5 * time.Second)
	s.killLeader(3 * time.Second)
	s.run(4 * time.Second)
	s.killRandom(4 * time.Second)
	s.run(4 * time.Second)
	s.killMajority(5 * time.Second)
	s.run(4 * time.Second)
	s.killAll(4 * time.Second)
	s.run(5 * time.Second)
	alignToSlot(2, 50*time.Millisecond)
	s.killLeader(3 * time.Second)
	s.run(4 * time.Second)
	s.finish("")
}

// TestLongPause5: plain and after-commit pauses of the leader on 5 nodes.
func TestLongPause5(t *testing.T) {
	s := newScenario(t, "pause5", scenarioOptions{nodes: 5, holdDirs: true,
		expect: Expect{LeaderChanges: 3, StaleAttempts: 2}})
	s.run(5 * time.Second)
	alignToSlot(2, 50*time.Millisecond)
	s.pauseLeader(4 * time.Second)
	s.run(4 * time.Second)
	s.pauseAfterCommit()
	s.run(4 * time.Second)
	s.pauseLeader(2 * time.Second)
	s.run(4 * time.Second)
	s.pauseAfterCommit()
	s.run(4 * time.Second)
	s.finish("")
}

// TestLongPartition5: every partition shape on 5 nodes (halves are 2|3,
// the bridge joins two pairs).
func TestLongPartition5(t *testing.T) {
	s := newScenario(t, "partition5", scenarioOptions{nodes: 5, expect: Expect{LeaderChanges: 2}})
	s.run(5 * time.Second)
	s.isolateLeader(5 * time.Second)
	s.run(4 * time.Second)
	s.splitHalves(5 * time.Second)
	s.run(4 * time.Second)
	s.bridge(6 * time.Second)
	s.run(4 * time.Second)
	s.oneWayFromLeader(5 * time.Second)
	s.run(4 * time.Second)
	s.isolateLeader(5 * time.Second)
	s.run(4 * time.Second)
	s.finish("")
}

// TestLongMembership5: a follower removed and added back with an empty
// data dir, then the leader itself removed and added back, then a kill.
func TestLongMembership5(t *testing.T) {
	s := newScenario(t, "membership5", scenarioOptions{nodes: 5, expect: Expect{LeaderChanges: 1}})
	s.run(5 * time.Second)
	s.removeAndReaddFollower()
	s.run(5 * time.Second)
	s.removeLeader()
	s.run(5 * time.Second)
	s.killRandom(3 * time.Second)
	s.run(5 * time.Second)
	s.finish("")
}

// TestLongClockSkew3: one node's scheduler clock runs 30 s ahead, another's
// 30 s behind (failpoint clock-offset); leadership visits both. Skew may
// make runs early or late, never duplicated or lost.
func TestLongClockSkew3(t *testing.T) {
	s := newScenario(t, "clockskew3", scenarioOptions{nodes: 3,
		nodeEnv: map[int][]string{1: {"clock-offset=+30s"}, 2: {"clock-offset=-30s"}},
		expect:  Expect{LeaderChanges: 3}})
	n1, ahead, behind := s.c.nodes[0], s.c.nodes[1], s.c.nodes[2]
	s.transferTo(n1)
	s.run(5 * time.Second)
	s.transferTo(ahead)
	s.run(8 * time.Second)
	s.transferTo(n1)
	// The cursor is 30 s ahead of n1's clock: nothing fires until it
	// passes, then everything continues.
	s.run(35 * time.Second)
	s.transferTo(behind)
	s.run(8 * time.Second)
	s.transferTo(n1)
	s.run(5 * time.Second)
	s.finish("")
}

// TestLongMixed5: three minutes of faults picked by the seed.
func TestLongMixed5(t *testing.T) {
	s := newScenario(t, "mixed5", scenarioOptions{nodes: 5, holdDirs: true, expect: Expect{LeaderChanges: 3}})
	nemeses := []func(){
		func() { s.killLeader(3 * time.Second) },
		func() { s.killRandom(3 * time.Second) },
		func() { s.killMajority(4 * time.Second) },
		func() { s.killAll(3 * time.Second) },
		func() { s.pauseLeader(3 * time.Second) },
		func() { s.pauseAfterCommit() },
		func() { s.isolateLeader(4 * time.Second) },
		func() { s.splitHalves(4 * time.Second) },
		func() { s.bridge(4 * time.Second) },
		func() { s.oneWayFromLeader(4 * time.Second) },
	}
	deadline := time.Now().Add(3 * time.Minute)
	for i := 0; i < 40 && time.Now().Before(deadline); i++ {
		s.run(3 * time.Second)
		nemeses[s.rng.IntN(len(nemeses))]()
	}
	s.run(3 * time.Second)
	s.finish("")
}
