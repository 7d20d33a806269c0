package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Why attempts are cancelled; the executor's outcome detail names the cause.
var (
	errLeadershipLost = errors.New("leadership lost")
	errJobDeleted     = errors.New("job deleted")
	errCancelOther    = errors.New("a newer run of the job started (overlap cancel_other)")
	errShutdown       = errors.New("node shutting down")
	// errNoWorkerService fails a worker attempt on a node built without
	// one (tests, tools); raftcron serve always has it.
	errNoWorkerService = errors.New("worker target: this node has no worker service")
)

// submitter is the part of dispatch.Pool the dispatcher uses; a Remote is
// one too.
type submitter interface {
	Submit(ctx context.Context, a dispatch.Attempt, done func(dispatch.Attempt, dispatch.Outcome)) error
}

// localPool is the part of dispatch.Pool the dispatcher uses.
type localPool interface {
	submitter
	// Queued is how many accepted attempts wait for a worker.
	Queued() int
}

// task is one committed attempt on its way through this node.
type task struct {
	a    dispatch.Attempt
	kind pb.FireKind
	// serial: the job's attempts run one at a time (every overlap policy
	// but allow).
	serial bool
	ctx    context.Context
	cancel context.CancelCauseFunc
	// owner receives the outcome; it drops it once its term is over.
	owner *leader
	// submitted: handed to the pool (otherwise waiting in a lane or in
	// the overflow queue).
	submitted bool
	// lost: its remote worker was lost; an outcome reported after that is
	// late (see Remote).
	lost atomic.Bool
}

// lane orders the attempts of one serial job: one running, the rest
// waiting in token order.
type lane struct {
	running *task
	waiting []*task
}

// dispatcher hands committed attempts to the worker pool. It lives as long
// as the Scheduler, across terms: an attempt of an earlier term that is
// still stopping keeps its job's lane busy, so a new attempt of that job
// never runs beside it.
type dispatcher struct {
	pool localPool
	// remote takes worker attempts; nil when the node has no worker service.
	remote  Remote
	clock   Clock
	log     *slog.Logger
	metrics *metrics

	// mu guards everything below. Pool.Submit never blocks, so it is
	// called under mu; done callbacks take mu from the workers.
	mu sync.Mutex
	// lanes holds every serial job with a task running or waiting.
	lanes map[string]*lane
	// live holds every task not yet finished, by job, so that a job's
	// tasks can be cancelled. A job rarely has more than one, so a slice
	// (no map per job and attempt) is the cheap index.
	live map[string][]*task
	// overflow holds tasks the pool refused (queue full), in order; they
	// are submitted as workers free up.
	overflow []*task
	count    int
}

func newDispatcher(pool localPool, remote Remote, clock Clock, log *slog.Logger, m *metrics) *dispatcher {
	return &dispatcher{
		pool:    pool,
		remote:  remote,
		clock:   clock,
		log:     log,
		metrics: m,
		lanes:   make(map[string]*lane),
		live:    make(map[string][]*task),
	}
}

// backlog is the number of deliveries not yet taken: waiting for a pool
// worker (queued in the pool or in the overflow), or on their way to a
// remote worker that has not acknowledged them.
func (d *dispatcher) backlog() int {
	d.mu.Lock()
	n := len(d.overflow)
	d.mu.Unlock()
	n += d.pool.Queued()
	if d.remote != nil {
		n += d.remote.Unacked()
	}
	return n
}

// inFlight is the number of tasks not yet finished.
func (d *dispatcher) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.count
}

// dispatch takes committed attempts, in token order. A serial job's
// attempt waits until the job's earlier attempts have finished.
func (d *dispatcher) dispatch(ts ...*task) {
	if len(ts) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range ts {
		d.dispatchLocked(t)
	}
}

func (d *dispatcher) dispatchLocked(t *task) {
	d.live[t.a.Job] = append(d.live[t.a.Job], t)
	d.count++
	if cause := context.Cause(t.owner.ctx); cause != nil {
		// Its term ended before it came in; cancelOwner has run or waits
		// for mu, so this sees the end either way and nothing runs on.
		t.cancel(cause)
	}
	if t.serial {
		l := d.lanes[t.a.Job]
		if l == nil {
			l = &lane{}
			d.lanes[t.a.Job] = l
		}
		if l.running != nil {
			l.waiting = append(l.waiting, t)
			return
		}
		l.running = t
	}
	d.submitLocked(t)
}

// submitLocked hands t to the pool, or queues it behind earlier refusals.
func (d *dispatcher) submitLocked(t *task) {
	if len(d.overflow) > 0 {
		d.overflow = append(d.overflow, t)
		return
	}
	if !d.trySubmitLocked(t) {
		d.overflow = append(d.overflow, t)
	}
}

// trySubmitLocked reports false when the pool's queue is full. Worker
// attempts go to the remote dispatcher, whose queue has no bound.
func (d *dispatcher) trySubmitLocked(t *task) bool {
	var to submitter = d.pool
	if t.a.Worker != nil {
		to = d.remote
	}
	var err error
	if to == nil {
		err = errNoWorkerService
	} else {
		err = to.Submit(t.ctx, t.a, func(_ dispatch.Attempt, o dispatch.Outcome) { d.finished(t, o) })
	}
	switch {
	case err == nil:
		t.submitted = true
		if t.kind == pb.FireKind_FIRE_KIND_SCHEDULED || t.kind == pb.FireKind_FIRE_KIND_CATCHUP {
			d.metrics.lateness.Observe(d.clock.Now().Sub(t.a.ScheduledAt).Seconds())
		}
		return true
	case errors.Is(err, dispatch.ErrQueueFull):
		return false
	case errors.Is(err, errNoWorkerService):
		t.submitted = true
		go d.finished(t, dispatch.Outcome{
			State:      pb.RunState_RUN_STATE_FAILED,
			Detail:     err.Error(),
			StartedAt:  d.clock.Now(),
			FinishedAt: d.clock.Now(),
		})
		return true
	default:
		// The pool is closed: the node is stopping. The attempt never
		// started; the next leader re-dispatches it.
		t.submitted = true
		go d.finished(t, dispatch.Outcome{
			State:      pb.RunState_RUN_STATE_CANCELLED,
			Detail:     "not started: " + err.Error(),
			StartedAt:  d.clock.Now(),
			FinishedAt: d.clock.Now(),
		})
		return true
	}
}

// finished runs once per submitted task, on a pool worker, and once more
// for a lost remote attempt whose worker reports late.
func (d *dispatcher) finished(t *task, o dispatch.Outcome) {
	if t.lost.Load() {
		d.log.Info("late outcome of a lost attempt", "job", t.a.Job, "run_id", t.a.RunID,
			"token", t.a.Token, "outcome", outcomeLabel(o.State), "detail", o.Detail)
		t.owner.completed(t, o) // the FSM decides; superseded once re-dispatched
		return
	}
	if o.Lost {
		t.lost.Store(true)
		d.metrics.runs.WithLabelValues(outcomeLost).Inc()
		d.log.Warn("run attempt lost with its worker", "job", t.a.Job, "run_id", t.a.RunID,
			"token", t.a.Token, "attempt", t.a.Number, "detail", o.Detail)
		t.owner.lost(t)
		d.release(t)
		return
	}
	if o.State == pb.RunState_RUN_STATE_UNSPECIFIED {
		o.State = pb.RunState_RUN_STATE_FAILED
		if o.Detail == "" {
			o.Detail = "executor reported no outcome"
		}
	}
	d.metrics.runs.WithLabelValues(outcomeLabel(o.State)).Inc()
	// A success is logged at debug level: the counters and the run ledger
	// record every attempt, and one line per success was the costliest
	// part of a fire after the request itself. Anything else stays in the
	// log at info.
	level := slog.LevelInfo
	if o.State == pb.RunState_RUN_STATE_SUCCEEDED {
		level = slog.LevelDebug
	}
	if d.log.Enabled(context.Background(), level) {
		// Typed attributes: one line per attempt is the hottest log call.
		d.log.LogAttrs(context.Background(), level, "run attempt finished",
			slog.String("job", t.a.Job), slog.String("run_id", t.a.RunID),
			slog.Uint64("token", t.a.Token), slog.Uint64("attempt", uint64(t.a.Number)),
			slog.String("scheduled_at", t.a.ScheduledAt.UTC().Format(time.RFC3339)),
			slog.String("kind", kindLabel(t.kind)), slog.String("outcome", outcomeLabel(o.State)),
			slog.String("detail", o.Detail), slog.Duration("duration", o.FinishedAt.Sub(o.StartedAt)))
	}
	// The outcome is queued before the task stops counting as in flight,
	// so that "nothing in flight" means every outcome is in the completer.
	t.owner.completed(t, o)
	d.release(t)
}

// release forgets a finished task and lets the next ones go.
func (d *dispatcher) release(t *task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgetLocked(t)
	if t.serial {
		d.advanceLaneLocked(t.a.Job)
	}
	d.drainLocked()
}

func (d *dispatcher) forgetLocked(t *task) {
	tasks := d.live[t.a.Job]
	if i := slices.Index(tasks, t); i >= 0 {
		tasks = slices.Delete(tasks, i, i+1)
		d.count--
		if len(tasks) == 0 {
			delete(d.live, t.a.Job)
		} else {
			d.live[t.a.Job] = tasks
		}
	}
	t.cancel(nil) // release the context's resources
}

// advanceLaneLocked starts the next waiting task of a serial job.
func (d *dispatcher) advanceLaneLocked(job string) {
	l := d.lanes[job]
	if l == nil {
		return
	}
	l.running = nil
	if len(l.waiting) == 0 {
		delete(d.lanes, job)
		return
	}
	next := l.waiting[0]
	l.waiting = l.waiting[1:]
	l.running = next
	d.submitLocked(next)
}

// drainLocked submits overflow tasks while the pool takes them.
func (d *dispatcher) drainLocked() {
	for len(d.overflow) > 0 {
		if !d.trySubmitLocked(d.overflow[0]) {
			return
		}
		d.overflow[0] = nil
		d.overflow = d.overflow[1:]
	}
}

// cancelJob cancels the job's tasks with a token below before (0 = all):
// running ones stop, waiting ones end as cancelled without starting.
func (d *dispatcher) cancelJob(job string, before uint64, cause error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.live[job] {
		if before == 0 || t.a.Token < before {
			t.cancel(cause)
		}
	}
}

// cancelOwner cancels every attempt of an ended term (see newLeader).
func (d *dispatcher) cancelOwner(owner *leader, cause error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, tasks := range d.live {
		for _, t := range tasks {
			if t.owner == owner {
				t.cancel(cause)
			}
		}
	}
}

// dropTerm removes the tasks of an ended term that never reached the pool:
// they never started, and their term can no longer report outcomes. The
// next leader re-dispatches them. Submitted ones were cancelled with the
// term (cancelOwner) and report on their own.
func (d *dispatcher) dropTerm(owner *leader) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := d.overflow[:0]
	for _, t := range d.overflow {
		if t.owner == owner {
			d.dropLocked(t)
			continue
		}
		keep = append(keep, t)
	}
	clear(d.overflow[len(keep):])
	d.overflow = keep
	for job, l := range d.lanes {
		waiting := l.waiting[:0]
		for _, t := range l.waiting {
			if t.owner == owner {
				d.dropLocked(t)
				continue
			}
			waiting = append(waiting, t)
		}
		clear(l.waiting[len(waiting):])
		l.waiting = waiting
		if l.running != nil && !l.running.submitted && l.running.owner == owner {
			// Only an overflow task can be running unsubmitted; it was
			// dropped above.
			d.advanceLaneLocked(job)
		}
	}
}

func (d *dispatcher) dropLocked(t *task) {
	d.forgetLocked(t)
	d.log.Debug("attempt dropped before start: leadership lost",
		"job", t.a.Job, "run_id", t.a.RunID, "token", t.a.Token)
}

func kindLabel(k pb.FireKind) string {
	if l, ok := kindLabels[k]; ok {
		return l
	}
	return strings.ToLower(strings.TrimPrefix(k.String(), "FIRE_KIND_"))
}
