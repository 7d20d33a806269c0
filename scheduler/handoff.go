package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/secret"

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

// submitter is the part of dispatch.Pool the hand-off uses; a Remote is
// one too.
type submitter interface {
	Submit(ctx context.Context, a dispatch.Attempt, done func(dispatch.Attempt, dispatch.Outcome)) error
}

// localPool is the part of dispatch.Pool the hand-off uses.
type localPool interface {
	submitter
	// Queued is how many accepted attempts wait for a worker.
	Queued() int
}

// lane orders the attempts of one serial job: one running, the rest
// waiting in token order.
type lane struct {
	running *task
	waiting []*task
}

// handoff is the tick's last stage: it hands committed attempts to the
// worker pool, or to a remote worker, in each serial job's order, and
// holds them until their outcome is reported. It lives as long as the
// Scheduler, across terms: an attempt of an earlier term that is still
// stopping keeps its job's lane busy, so a new attempt of that job never
// runs beside it.
type handoff struct {
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

func newHandoff(pool localPool, remote Remote, clock Clock, log *slog.Logger, m *metrics) *handoff {
	return &handoff{
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
func (h *handoff) backlog() int {
	h.mu.Lock()
	n := len(h.overflow)
	h.mu.Unlock()
	n += h.pool.Queued()
	if h.remote != nil {
		n += h.remote.Unacked()
	}
	return n
}

// inFlight is the number of tasks not yet finished.
func (h *handoff) inFlight() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// dispatch takes committed attempts, in token order. A serial job's
// attempt waits until the job's earlier attempts have finished.
func (h *handoff) dispatch(ts ...*task) {
	if len(ts) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range ts {
		h.dispatchLocked(t)
	}
}

func (h *handoff) dispatchLocked(t *task) {
	h.live[t.a.Job] = append(h.live[t.a.Job], t)
	h.count++
	if cause := context.Cause(t.owner.ctx); cause != nil {
		// Its term ended before it came in; cancelOwner has run or waits
		// for mu, so this sees the end either way and nothing runs on.
		t.cancel(cause)
	}
	if t.serial {
		l := h.lanes[t.a.Job]
		if l == nil {
			l = &lane{}
			h.lanes[t.a.Job] = l
		}
		if l.running != nil {
			l.waiting = append(l.waiting, t)
			return
		}
		l.running = t
	}
	h.submitLocked(t)
}

// submitLocked hands t to the pool, or queues it behind earlier refusals.
func (h *handoff) submitLocked(t *task) {
	if len(h.overflow) > 0 {
		h.overflow = append(h.overflow, t)
		return
	}
	if !h.trySubmitLocked(t) {
		h.overflow = append(h.overflow, t)
	}
}

// trySubmitLocked reports false when the pool's queue is full. Worker
// attempts go to the worker hub, whose queue has no bound.
func (h *handoff) trySubmitLocked(t *task) bool {
	var to submitter = h.pool
	if t.a.Worker != nil {
		to = h.remote
	}
	var err error
	switch {
	case t.unresolved != nil:
		err = t.unresolved
	case to == nil:
		err = errNoWorkerService
	default:
		err = to.Submit(t.ctx, t.a, func(_ dispatch.Attempt, o dispatch.Outcome) { h.finished(t, o) })
	}
	switch {
	case err == nil:
		t.submitted = true
		if t.kind == pb.FireKind_FIRE_KIND_SCHEDULED || t.kind == pb.FireKind_FIRE_KIND_CATCHUP {
			h.metrics.lateness.Observe(h.clock.Now().Sub(t.a.ScheduledAt.Add(t.jitter)).Seconds())
		}
		return true
	case errors.Is(err, dispatch.ErrQueueFull):
		return false
	case errors.Is(err, errNoWorkerService), errors.Is(err, errSecretMissing):
		t.submitted = true
		o := dispatch.Outcome{
			State:      pb.RunState_RUN_STATE_FAILED,
			Detail:     err.Error(),
			StartedAt:  h.clock.Now(),
			FinishedAt: h.clock.Now(),
		}
		if errors.Is(err, errSecretMissing) {
			o.Reason = secret.ReasonMissing
		}
		go h.finished(t, o)
		return true
	default:
		// The pool is closed: the node is stopping. The attempt never
		// started; the next leader re-dispatches it.
		t.submitted = true
		go h.finished(t, dispatch.Outcome{
			State:      pb.RunState_RUN_STATE_CANCELLED,
			Detail:     "not started: " + err.Error(),
			StartedAt:  h.clock.Now(),
			FinishedAt: h.clock.Now(),
		})
		return true
	}
}

// finished runs once per submitted task, on a pool worker, and once more
// for a lost remote attempt whose worker reports late.
func (h *handoff) finished(t *task, o dispatch.Outcome) {
	o = scrub(o, t.secrets)
	if t.lost.Load() {
		h.log.Info("late outcome of a lost attempt", "job", t.a.Job, "run_id", t.a.RunID,
			"token", t.a.Token, "outcome", outcomeLabel(o.State), "detail", o.Detail)
		t.owner.completed(t, o) // the FSM decides; superseded once re-dispatched
		return
	}
	if o.Lost {
		t.lost.Store(true)
		h.metrics.runs.WithLabelValues(outcomeLost).Inc()
		h.log.Warn("run attempt lost with its worker", "job", t.a.Job, "run_id", t.a.RunID,
			"token", t.a.Token, "attempt", t.a.Number, "detail", o.Detail)
		t.owner.lost(t)
		h.release(t)
		return
	}
	if o.State == pb.RunState_RUN_STATE_UNSPECIFIED {
		o.State = pb.RunState_RUN_STATE_FAILED
		if o.Detail == "" {
			o.Detail = "executor reported no outcome"
		}
	}
	h.metrics.runs.WithLabelValues(outcomeLabel(o.State)).Inc()
	// A success is logged at debug level: the counters and the run ledger
	// record every attempt, and one line per success was the costliest
	// part of a fire after the request itself. Anything else stays in the
	// log at info.
	level := slog.LevelInfo
	if o.State == pb.RunState_RUN_STATE_SUCCEEDED {
		level = slog.LevelDebug
	}
	if h.log.Enabled(context.Background(), level) {
		// Typed attributes: one line per attempt is the hottest log call.
		h.log.LogAttrs(context.Background(), level, "run attempt finished",
			slog.String("job", t.a.Job), slog.String("run_id", t.a.RunID),
			slog.Uint64("token", t.a.Token), slog.Uint64("attempt", uint64(t.a.Number)),
			slog.String("scheduled_at", t.a.ScheduledAt.UTC().Format(time.RFC3339)),
			slog.String("kind", kindLabel(t.kind)), slog.String("outcome", outcomeLabel(o.State)),
			slog.String("detail", o.Detail), slog.Duration("duration", o.FinishedAt.Sub(o.StartedAt)))
	}
	// The outcome is queued before the task stops counting as in flight,
	// so that "nothing in flight" means every outcome is in the completer.
	t.owner.completed(t, o)
	h.release(t)
}

// release forgets a finished task and lets the next ones go.
func (h *handoff) release(t *task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgetLocked(t)
	if t.serial {
		h.advanceLaneLocked(t.a.Job)
	}
	h.drainLocked()
}

func (h *handoff) forgetLocked(t *task) {
	tasks := h.live[t.a.Job]
	if i := slices.Index(tasks, t); i >= 0 {
		tasks = slices.Delete(tasks, i, i+1)
		h.count--
		if len(tasks) == 0 {
			delete(h.live, t.a.Job)
		} else {
			h.live[t.a.Job] = tasks
		}
	}
	t.cancel(nil) // release the context's resources
}

// advanceLaneLocked starts the next waiting task of a serial job.
func (h *handoff) advanceLaneLocked(job string) {
	l := h.lanes[job]
	if l == nil {
		return
	}
	l.running = nil
	if len(l.waiting) == 0 {
		delete(h.lanes, job)
		return
	}
	next := l.waiting[0]
	l.waiting = l.waiting[1:]
	l.running = next
	h.submitLocked(next)
}

// drainLocked submits overflow tasks while the pool takes them.
func (h *handoff) drainLocked() {
	for len(h.overflow) > 0 {
		if !h.trySubmitLocked(h.overflow[0]) {
			return
		}
		h.overflow[0] = nil
		h.overflow = h.overflow[1:]
	}
}

// cancelJob cancels the job's tasks with a token below before (0 = all):
// running ones stop, waiting ones end as cancelled without starting.
func (h *handoff) cancelJob(job string, before uint64, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.live[job] {
		if before == 0 || t.a.Token < before {
			t.cancel(cause)
		}
	}
}

// cancelOwner cancels every attempt of an ended term (see newLeader).
func (h *handoff) cancelOwner(owner *leader, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tasks := range h.live {
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
func (h *handoff) dropTerm(owner *leader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keep := h.overflow[:0]
	for _, t := range h.overflow {
		if t.owner == owner {
			h.dropLocked(t)
			continue
		}
		keep = append(keep, t)
	}
	clear(h.overflow[len(keep):])
	h.overflow = keep
	for job, l := range h.lanes {
		waiting := l.waiting[:0]
		for _, t := range l.waiting {
			if t.owner == owner {
				h.dropLocked(t)
				continue
			}
			waiting = append(waiting, t)
		}
		clear(l.waiting[len(waiting):])
		l.waiting = waiting
		if l.running != nil && !l.running.submitted && l.running.owner == owner {
			// Only an overflow task can be running unsubmitted; it was
			// dropped above.
			h.advanceLaneLocked(job)
		}
	}
}

func (h *handoff) dropLocked(t *task) {
	h.forgetLocked(t)
	h.log.Debug("attempt dropped before start: leadership lost",
		"job", t.a.Job, "run_id", t.a.RunID, "token", t.a.Token)
}
