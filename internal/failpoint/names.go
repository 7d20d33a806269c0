// Package failpoint holds raftcron's test-only fault hooks. In a normal
// build every hook is a constant no-op the compiler removes; a build with
// the tag failpoints reads the enabled hooks from RAFTCRON_FAILPOINTS, a
// comma-separated list of name or name=value:
//
//	RAFTCRON_FAILPOINTS=dispatch-before-commit
//	RAFTCRON_FAILPOINTS=pause-after-commit=/var/lib/raftcron-test/hold,clock-offset=-30s
//
// The end-to-end suite (test/e2e) builds the binary with the tag to run its
// negative controls: each hook breaks one guarantee on purpose, and the
// suite asserts that its checker notices.
package failpoint

// Names of the hooks, as written in RAFTCRON_FAILPOINTS.
const (
	// DispatchBeforeCommit: the leader hands a FireBatch's fires to the
	// executors before the batch is committed, with the tokens it expects
	// the batch to get (breaks G2).
	DispatchBeforeCommit = "dispatch-before-commit"
	// SkipSlotDedupe: the FSM accepts a fire for a slot at or before the
	// job's cursor, and the leader re-proposes slots it fired already
	// (breaks G1).
	SkipSlotDedupe = "skip-slot-dedupe"
	// StaleReads: linearizable registry reads skip the read barrier
	// (breaks G6).
	StaleReads = "stale-reads"
	// PauseAfterCommit=DIR: while DIR/arm exists, the next attempt about to
	// be delivered removes it, writes its token to DIR/held and waits
	// until DIR/held is removed (at most PauseMax); it is then delivered
	// even if the node lost leadership meanwhile, as a process paused
	// between commit and send would.
	PauseAfterCommit = "pause-after-commit"
	// ChainSeparateEntry=DURATION: the state machine does not fire a
	// chained job in the entry that records its parent's outcome; the
	// leader fires it in an entry of its own DURATION later, as a chain
	// that kept the child's fire in the leader's memory would: a leader
	// lost in between loses the child (breaks chains' exactly once).
	ChainSeparateEntry = "chain-separate-entry"
	// ClockOffset=DURATION (e.g. +30s, -30s): the scheduler's clock reads
	// the wall clock plus DURATION.
	ClockOffset = "clock-offset"
	// AlertSendTwice: the leader sends every alert notification a second
	// time under an id the log never committed, as a leader that derived
	// an event again instead of reading it from the log would (breaks
	// "one notification id per committed alert").
	AlertSendTwice = "alert-send-twice"
)

// EnvVar names the environment variable the failpoints build reads.
const EnvVar = "RAFTCRON_FAILPOINTS"
