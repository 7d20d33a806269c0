//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// Negative controls: each runs a deliberately broken system, and the test
// passes only if the checker reports the violation the breakage causes.
// A checker that cannot fail proves nothing.

// TestControlDispatchBeforeCommit: the leader dispatches fires before they
// commit (failpoint dispatch-before-commit). Isolating the leader just
// before a slot leaves a dispatched batch that never commits: G2.
func TestControlDispatchBeforeCommit(t *testing.T) {
	s := newScenario(t, "control-dispatch-before-commit", scenarioOptions{nodes: 3,
		failpoints: []string{"dispatch-before-commit"}})
	s.run(3 * time.Second)
	s.isolateLeader(3 * time.Second)
	s.run(2 * time.Second)
	s.isolateLeader(3 * time.Second)
	s.run(2 * time.Second)
	requireViolation(t, s.finish(RuleG2), RuleG2, "dispatch-before-commit")
}

// TestControlSkipSlotDedupe: the state machine accepts slots at or before
// a job's cursor and the leader proposes recent slots again (failpoint
// skip-slot-dedupe): G1.
func TestControlSkipSlotDedupe(t *testing.T) {
	s := newScenario(t, "control-skip-slot-dedupe", scenarioOptions{nodes: 3,
		failpoints: []string{"skip-slot-dedupe"}})
	s.run(6 * time.Second)
	s.killLeader(2 * time.Second)
	s.run(3 * time.Second)
	requireViolation(t, s.finish(RuleG1), RuleG1, "skip-slot-dedupe")
}

// TestControlSinkWithoutFence: the downstream applies every request, with
// no token check and no de-duplication. The attempt held across a pause
// arrives stale and takes effect: G3 (and a second effect for its run).
func TestControlSinkWithoutFence(t *testing.T) {
	s := newScenario(t, "control-sink-without-fence", scenarioOptions{nodes: 3, holdDirs: true, sink: SinkOpen})
	s.run(4 * time.Second)
	s.pauseAfterCommit()
	s.run(3 * time.Second)
	requireViolation(t, s.finish(RuleG3), RuleG3, "sink-without-fence")
}

// TestControlStaleReads: registry reads skip the read barrier (failpoint
// stale-reads). A cut-off leader and lagging followers serve old versions:
// G6.
func TestControlStaleReads(t *testing.T) {
	s := newScenario(t, "control-stale-reads", scenarioOptions{nodes: 3,
		failpoints: []string{"stale-reads"}})
	s.run(3 * time.Second)
	s.isolateLeader(5 * time.Second)
	s.run(2 * time.Second)
	s.isolateLeader(5 * time.Second)
	s.run(2 * time.Second)
	requireViolation(t, s.finish(RuleG6), RuleG6, "stale-reads")
}

// TestControlChainSeparateEntry: the state machine leaves a child's fire
// to the leader, which proposes it in an entry of its own 1.5 s after the
// parent's outcome (failpoint chain-separate-entry); a leader killed in
// between loses the child: chains.
func TestControlChainSeparateEntry(t *testing.T) {
	s := newScenario(t, "control-chain-separate-entry", scenarioOptions{nodes: 3, chains: true,
		failpoints: []string{"chain-separate-entry=1500ms"}})
	s.run(4 * time.Second)
	s.killLeaderAfterParent(500*time.Millisecond, 2*time.Second)
	s.run(3 * time.Second)
	s.killLeaderAfterParent(500*time.Millisecond, 2*time.Second)
	s.run(3 * time.Second)
	requireViolation(t, s.finish(RuleChains), RuleChains, "chain-separate-entry")
}
