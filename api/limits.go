package api

import "github.com/raftcron/raftcron/jobspec"

// Limits bound what this node's JobService admits. A zero field takes its
// default.
type Limits struct {
	// Spec bounds each spec; a spec beyond it is refused before anything
	// is proposed (InvalidArgument naming the field and the limit).
	Spec jobspec.Limits
	// MaxJobs is the most jobs the registry may hold. Every put carries it,
	// so that the FSM refuses a create beyond it alike on every node
	// (ResourceExhausted).
	MaxJobs uint64
	// MaxOpenRuns is the most check-in runs one job may have open: every
	// start ping carries it, and the FSM refuses one beyond it
	// (ResourceExhausted). The node sets the scheduler's limit of open
	// runs; 0 means none.
	MaxOpenRuns uint32
	// MaxChainDepth is the longest chain of jobs (after) the registry may
	// hold, counted in jobs; MaxChainFanout the most jobs that may run
	// after one job. Every put carries them, like MaxJobs
	// (FailedPrecondition).
	MaxChainDepth  uint32
	MaxChainFanout uint32
	// MaxBackfillSlots is the most slots one backfill may hold: a range
	// with more is refused (InvalidArgument), and the start carries it, so
	// every node decides alike.
	MaxBackfillSlots uint64
}

// DefaultMaxChainDepth and DefaultMaxChainFanout bound the graph of
// dependencies: a parent's outcome fires or records a run for each of its
// children in the one entry that records it, and a registration walks the
// chain through the job.
const (
	DefaultMaxChainDepth  = 16
	DefaultMaxChainFanout = 100
)

// chainLimits are the limits a put carries to the FSM.
func (l Limits) chainLimits() (depth, fanout uint32) {
	depth, fanout = l.MaxChainDepth, l.MaxChainFanout
	if depth == 0 {
		depth = DefaultMaxChainDepth
	}
	if fanout == 0 {
		fanout = DefaultMaxChainFanout
	}
	return depth, fanout
}

// DefaultMaxBackfillSlots bounds a backfill to what a night of per-minute
// slots or a year of daily ones take, several times over, while a typo in
// a range (a year instead of a day of per-second slots) is refused.
const DefaultMaxBackfillSlots = 10_000

func (l Limits) maxBackfillSlots() uint64 {
	if l.MaxBackfillSlots > 0 {
		return l.MaxBackfillSlots
	}
	return DefaultMaxBackfillSlots
}

// DefaultMaxJobs is twice the registry the scale target was measured at (a
// million jobs within 1.5 GiB per node, DESIGN §13): the measured scale and
// the benchmarks fit with room, and a runaway client is stopped before it
// takes a node's memory far past what was measured.
const DefaultMaxJobs = 2_000_000

func (l Limits) maxJobs() uint64 {
	if l.MaxJobs > 0 {
		return l.MaxJobs
	}
	return DefaultMaxJobs
}

// maxListScan bounds the jobs one ListJobs call looks at, under the FSM's
// read lock: a label filter that matches few of a million jobs answers a
// short page, or an empty one, with a page token to go on from, instead of
// holding the lock for a scan of the whole registry.
const maxListScan = 10_000

// maxRunScan bounds the runs one ListRuns call looks at, likewise: a scope
// that matches few runs of a large ledger answers a short page, or an empty
// one, with a page token.
const maxRunScan = 10_000
