// Package scheduler is raftcron's leader-only fire loop: it plans each job's
// slots from the replicated state, commits fires through Raft in FireBatch
// entries, dispatches exactly the attempts the FSM accepted, and
// commits their outcomes. See DESIGN.md.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/secret"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// State is the read side of the FSM the scheduler plans from. *fsm.FSM
// satisfies it.
type State interface {
	// StoredJob returns the stored job (Status unset) and its status,
	// shared: the FSM replaces them on every write and never changes them,
	// so the scheduler reads them without a copy and must never change
	// them. fsm.ErrNotFound if there is none.
	StoredJob(name string) (fsm.StoredJob, error)
	// Run returns one run of the ledger; fsm.ErrNotFound if there is none.
	Run(id string) (*pb.Run, error)
	// OpenRuns lists every DISPATCHED and RETRYING run.
	OpenRuns() []*pb.Run
	// StoredJobs walks every job in name order.
	StoredJobs(fn func(sj fsm.StoredJob) bool)
	// ClusterVersion is the active cluster version: a lost attempt is
	// re-dispatched by its token only from fsm.WorkersVersion on.
	ClusterVersion() uint32
	// FrozenUntil reports whether a freeze matching the job is in force
	// at t (Unix seconds), and until when: a slot a deferring freeze held
	// back is released once none is.
	FrozenUntil(job string, t int64) (until int64, frozen bool)
}

// DefaultWorkers is how many deliveries a node runs at once unless
// Config.Workers says otherwise.
const DefaultWorkers = 64

// DefaultMaxOpenRuns caps one overlap-allow job's open runs unless
// Config.MaxOpenRuns says otherwise. An allow job with more in flight has a
// target that hangs; every open run stays in the ledger and in its job's
// status, which each fire of the job copies.
const DefaultMaxOpenRuns = 100

// Config wires a Scheduler.
type Config struct {
	State    State    // required
	Proposer Proposer // required
	// Executor delivers attempts (dispatch.NewRouter over the http and
	// exec executors). Required.
	Executor dispatch.Executor
	// Remote takes the attempts of jobs with a worker target (the node's
	// worker service); nil fails them.
	Remote Remote
	// Progress holds remote workers' progress reports, which the leader
	// commits at most once a second (the worker hub reports into it); nil:
	// none is committed.
	Progress *Progress
	// Workers bounds concurrent deliveries; 0 means DefaultWorkers.
	Workers int
	// Queue is how many attempts may wait for a worker inside the pool;
	// 0 means 1024. More wait in the scheduler's own queue.
	Queue int
	// Clock is the time source; nil means the system clock.
	Clock Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// NodeID is this node's Raft server ID; empty means Proposer.ID().
	NodeID string
	// ApplyTimeout bounds one proposal or barrier; 0 means 10s.
	ApplyTimeout time.Duration
	// MaxOpenRuns caps the runs one overlap-allow job may have open; 0
	// means DefaultMaxOpenRuns.
	MaxOpenRuns int
	// AheadOfWave, if set, is called by the loop with the number of fires
	// and misses it has just planned ahead of their due time (DESIGN.md,
	// "Planning ahead"): a wave is coming, and the process may prepare for
	// it in the quiet before it instead of during it (the server collects
	// garbage). It must return at once.
	AheadOfWave func(fires int)
	// Secrets and SecretKeys fill in the ${secret:NAME} references of an
	// attempt's target as it is dispatched (fsm.FSM, and the keys of
	// serve --secrets-key-file). Without them, an attempt whose target
	// references a secret fails with reason secret_missing.
	Secrets    SecretStore
	SecretKeys *secret.Keyring
}

// Remote hands attempts to remote workers. Submit never blocks; done is
// called once with the attempt's outcome, from any goroutine. After an
// outcome with Lost set, done may be called once more with the outcome the
// lost worker reported late: it is committed for the FSM to judge (it is
// superseded once the attempt was re-dispatched), and changes nothing else.
//
// Unacked counts the attempts submitted that no worker has acknowledged
// yet, leaving out those that wait for a worker with free capacity: while
// it is above zero, deliveries are under way and outcomes wait (see
// leader.deliveriesWait).
type Remote interface {
	Submit(ctx context.Context, a dispatch.Attempt, done func(dispatch.Attempt, dispatch.Outcome)) error
	Unacked() int
}

// ErrInvalidConfig: a required Config field is missing.
var ErrInvalidConfig = errors.New("scheduler: invalid config")

// Scheduler runs the fire loop while this node leads.
type Scheduler struct {
	state        State
	prop         Proposer
	clock        Clock
	log          *slog.Logger
	self         string
	applyTimeout time.Duration
	aheadOfWave  func(fires int)
	// maxOpenRuns goes with every FireBatch (the FSM enforces it).
	maxOpenRuns uint32
	metrics     *metrics
	pool        *dispatch.Pool
	handoff     *handoff
	secrets     *secrets
	progress    *Progress

	// mu guards cur, last and stopped.
	mu sync.Mutex
	// cur is the loop of the current leadership, nil when not leading.
	cur *leader
	// last is the most recently started loop, possibly still exiting.
	last    *leader
	stopped bool

	// dmu guards tracking and dirty. The FSM observer writes them from the
	// goroutine that applies the Raft log, so holding dmu is always short.
	dmu sync.Mutex
	// tracking is on while a leader loop is planning; followers record
	// nothing.
	tracking bool
	// dirty names jobs to re-plan from the state.
	dirty map[string]struct{}
	// cancelled holds runs cancelled since the tick began (cancel.go).
	cancelled []*pb.Run
	// kick wakes the loop (cap 1; a pending kick is enough).
	kick chan struct{}
}

// New returns a scheduler that does nothing until SetLeader(true).
func New(cfg Config) (*Scheduler, error) {
	switch {
	case cfg.State == nil:
		return nil, fmt.Errorf("%w: State is required", ErrInvalidConfig)
	case cfg.Proposer == nil:
		return nil, fmt.Errorf("%w: Proposer is required", ErrInvalidConfig)
	case cfg.Executor == nil:
		return nil, fmt.Errorf("%w: Executor is required", ErrInvalidConfig)
	case cfg.Workers < 0 || cfg.Queue < 0 || cfg.ApplyTimeout < 0 || cfg.MaxOpenRuns < 0:
		return nil, fmt.Errorf("%w: Workers, Queue, ApplyTimeout and MaxOpenRuns must not be negative", ErrInvalidConfig)
	}
	s := &Scheduler{
		state:        cfg.State,
		prop:         cfg.Proposer,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		self:         cfg.NodeID,
		applyTimeout: cfg.ApplyTimeout,
		aheadOfWave:  cfg.AheadOfWave,
		dirty:        make(map[string]struct{}),
		kick:         make(chan struct{}, 1),
		secrets:      &secrets{store: cfg.Secrets, keys: cfg.SecretKeys},
		progress:     cfg.Progress,
	}
	if s.clock == nil {
		s.clock = SystemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.self == "" {
		s.self = cfg.Proposer.ID()
	}
	if s.applyTimeout == 0 {
		s.applyTimeout = 10 * time.Second
	}
	s.maxOpenRuns = DefaultMaxOpenRuns
	if cfg.MaxOpenRuns > 0 {
		s.maxOpenRuns = uint32(min(cfg.MaxOpenRuns, math.MaxUint32))
	}
	workers, queue := cfg.Workers, cfg.Queue
	if workers == 0 {
		workers = DefaultWorkers
	}
	if queue == 0 {
		queue = 1024
	}
	s.metrics = newMetrics(func() float64 { return float64(s.InFlight()) })
	s.pool = dispatch.NewPool(workers, queue, cfg.Executor, s.clock.Now)
	s.handoff = newHandoff(s.pool, cfg.Remote, s.clock, s.log, s.metrics)
	return s, nil
}

// Collectors are the scheduler's Prometheus metrics, for the node's
// registry.
func (s *Scheduler) Collectors() []prometheus.Collector { return s.metrics.collectors() }

// InFlight is the number of attempts this node committed and has not
// finished: waiting for their job's earlier attempt, queued, or executing.
func (s *Scheduler) InFlight() int { return s.handoff.inFlight() }

// Stop ends the loop, cancels every in-flight attempt and waits until each
// has stopped. The scheduler cannot be started again.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	if s.cur != nil {
		s.cur.cancel(errShutdown)
		s.cur = nil
	}
	last := s.last
	s.mu.Unlock()
	if last != nil {
		<-last.done
	}
	s.pool.Close()
}

// JobsChanged implements fsm.Observer: the named jobs are re-planned,
// unless the change is this node's own FireBatch coming back (see echo).
// It never blocks.
func (s *Scheduler) JobsChanged(o fsm.Origin, names []string) {
	if s.echo(o) {
		return
	}
	s.markDirty(names...)
}

// RunsChanged implements fsm.Observer: the runs' jobs are re-planned, as
// for JobsChanged, and the attempts of runs cancelled on request stop.
func (s *Scheduler) RunsChanged(o fsm.Origin, runs []*pb.Run) {
	if s.echo(o) {
		return // a FireBatch cancels no run on request, nor does progress
	}
	names := make([]string, 0, len(runs))
	for _, r := range runs {
		names = append(names, r.GetJob())
		if isCancelRequest(r) {
			s.runCancelled(r)
		}
	}
	s.markDirty(names...)
}

// echo reports whether a change is this node's own FireBatch coming back
// through the FSM, or remote workers' progress. The tick that proposed a
// FireBatch queues its jobs for planning again itself once the entry has
// returned (pipeline.adopt), except those whose accepted fires left their
// plan standing (fresh.go): hearing the change as well would plan those
// again only to find the new run in hand and the next slot already on the
// heap. Progress changes nothing a plan reads.
func (s *Scheduler) echo(o fsm.Origin) bool {
	return (o.Kind == fsm.KindFireBatch && o.Leader == s.self) || o.Kind == fsm.KindRecordProgress
}

var (
	_ fsm.Observer = (*Scheduler)(nil)
	_ State        = (*fsm.FSM)(nil)
)

// markDirty queues jobs for re-planning and wakes the loop; it records
// nothing while no loop plans.
func (s *Scheduler) markDirty(names ...string) {
	if len(names) == 0 {
		return
	}
	s.dmu.Lock()
	if !s.tracking {
		s.dmu.Unlock()
		return
	}
	for _, n := range names {
		s.dirty[n] = struct{}{}
	}
	s.dmu.Unlock()
	s.wakeLoop()
}

func (s *Scheduler) wakeLoop() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// setTracking turns dirty tracking on (with an empty set) or off.
func (s *Scheduler) setTracking(on bool) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.tracking = on
	clear(s.dirty)
	s.cancelled = nil
}

// takeDirty appends the dirty jobs to into and empties the set.
func (s *Scheduler) takeDirty(into []string) []string {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	for n := range s.dirty {
		into = append(into, n)
	}
	clear(s.dirty)
	return into
}

func (s *Scheduler) hasDirty() bool {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return len(s.dirty) > 0
}
