package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// barrierRetry is the pause between failed barriers while still asked to
// lead.
const barrierRetry = 500 * time.Millisecond

// leader is one leadership term's loop and everything that lives exactly as
// long: the heap, the attempts in hand, the completer.
type leader struct {
	s   *Scheduler
	ctx context.Context
	// cancel ends the term: its context, and with it every attempt of the
	// term (see newLeader).
	cancel context.CancelCauseFunc
	// done is closed when the loop has exited and cleaned up.
	done chan struct{}

	// Owned by the loop goroutine.
	term uint64
	heap *dueHeap
	// known holds the tokens of attempts handed to the hand-off whose
	// outcome is not committed yet. An attempt of this term by this node
	// that is not in it was committed without this node knowing (an
	// Apply error after all), and is adopted.
	known map[uint64]struct{}
	// resolving holds the tokens of lost attempts whose re-dispatch was
	// planned and is not decided yet: their jobs' new slots wait.
	resolving map[uint64]struct{}
	// cool holds jobs whose last fires were refused without effect, and
	// until when their planning rests, so a disagreement with the FSM
	// never becomes a hot loop.
	cool map[string]time.Time
	// extra are fires for the first tick that no job plan produces:
	// orphans of deleted jobs.
	extra []*pb.Fire
	// ahead is the next wave, planned before it is due; nil if none.
	ahead *ahead

	comp *completer
	// compWG waits for the completer and the progress committer.
	compWG sync.WaitGroup
	// unsettled counts outcomes taken from the hand-off whose proposal
	// has not returned yet.
	unsettled atomic.Int64
	// firing is set while a tick's entries are being committed and their
	// fires handed to the hand-off (pipeline.propose to acceptRest).
	firing atomic.Bool
	// idleAt is the clock reading of the tick the loop is sleeping after,
	// 0 while it works. With unsettled it tells tests that everything up
	// to a time has been handled.
	idleAt atomic.Int64

	// mu guards forgotten, triggers, lostFires and closed (written from other
	// goroutines).
	mu sync.Mutex
	// forgotten are tokens whose outcome was committed; the loop removes
	// them from known at the start of a tick, before it reads the state.
	forgotten []uint64
	triggers  []*triggerReq
	// lostFires are REDISPATCH fires for attempts whose remote worker was
	// lost, for the next tick after their notBefore.
	lostFires []lostFire
	closed    bool
}

func newLeader(s *Scheduler) *leader {
	ctx, cancelTerm := context.WithCancelCause(context.Background())
	l := &leader{
		s:         s,
		ctx:       ctx,
		done:      make(chan struct{}),
		known:     make(map[uint64]struct{}),
		resolving: make(map[uint64]struct{}),
		cool:      make(map[string]time.Time),
		comp:      newCompleter(),
	}
	// An attempt's context is not a child of the term's: a wave's
	// thousands of children would each take the term context's lock twice,
	// on the loop that dispatches them and on the goroutines that report
	// their outcomes. The hand-off cancels the term's attempts instead,
	// at once, within this call.
	l.cancel = func(cause error) {
		cancelTerm(cause)
		s.handoff.cancelOwner(l, context.Cause(ctx))
	}
	return l
}

// SetLeader starts the leader loop (true) or stops it (false). It never
// blocks and never calls Raft, so the cluster may call it from its
// leadership watcher. A loop started after a stop first waits for the
// stopped one to finish cleaning up.
func (s *Scheduler) SetLeader(isLeader bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if !isLeader {
		if s.cur != nil {
			s.cur.cancel(errLeadershipLost)
			s.cur = nil
		}
		return
	}
	if s.cur != nil {
		return
	}
	l := newLeader(s)
	prev := s.last
	s.cur, s.last = l, l
	go l.run(prev)
}

// current is the loop of the current leadership, or nil.
func (s *Scheduler) current() *leader {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (l *leader) run(prev *leader) {
	defer close(l.done)
	if prev != nil {
		<-prev.done
	}
	if l.establishLeadership() {
		l.loop()
	}
	l.revokeLeadership()
}

// establishLeadership: Barrier (the state reflects every earlier term),
// then the heap is rebuilt from the state. Reconciling orphans and catching
// up happen in the first ticks, through the same planning as every tick:
// each job with open runs or due slots is due at once.
func (l *leader) establishLeadership() bool {
	for {
		term := l.s.prop.Term()
		ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
		err := l.s.prop.Barrier(ctx)
		cancel()
		if err == nil {
			l.term = term
			break
		}
		if l.ctx.Err() != nil {
			return false
		}
		l.s.log.Warn("scheduler: barrier failed; retrying", "error", err)
		if !l.sleep(barrierRetry) {
			return false
		}
	}
	// Track changes before reading the state, so none falls between.
	l.s.setTracking(true)
	now := l.s.clock.Now()
	n := l.rebuild(now)
	l.sweepDeletedJobs()
	l.compWG.Add(1)
	go func() {
		defer l.compWG.Done()
		l.runCompleter(l.comp)
	}()
	if p := l.s.progress; p != nil {
		l.compWG.Add(1)
		go func() {
			defer l.compWG.Done()
			l.runProgress(p)
		}()
	}
	l.s.log.Info("scheduler: leading", "term", l.term, "jobs", n, "due_now", l.dueNow(now))
	return true
}

// revokeLeadership undoes establishLeadership: every in-flight attempt of
// the term is cancelled at once (l.cancel: the term's context, then every
// attempt the hand-off holds for it), the
// ones not started are dropped, queued outcomes are dropped, the heap goes.
// What stays open in the ledger is the next leader's to reconcile.
func (l *leader) revokeLeadership() {
	l.cancel(errLeadershipLost)
	l.s.setTracking(false)
	l.compWG.Wait()
	dropped := l.comp.close()
	l.s.handoff.dropTerm(l)
	l.mu.Lock()
	l.closed = true
	triggers := l.triggers
	l.triggers = nil
	l.mu.Unlock()
	for _, t := range triggers {
		t.reply(nil, cluster.ErrNotLeader)
	}
	l.heap = nil
	l.known = nil
	l.s.secrets.forget()
	l.s.log.Info("scheduler: stopped leading", "term", l.term, "cause", context.Cause(l.ctx).Error(),
		"outcomes_dropped", dropped)
}

// rebuild fills the heap from the state: O(n) schedule evaluations and one
// heap initialisation. Jobs with open runs, a buffered slot, a slot a
// freeze held back or a running backfill are due now, so that the first
// ticks reconcile them.
func (l *leader) rebuild(now time.Time) int {
	var jobs []fsm.StoredJob
	// The FSM's stored values are immutable, so the pointers may be kept
	// past the walk. Collecting first keeps the walk short whatever the
	// FSM holds while it runs.
	l.s.state.StoredJobs(func(sj fsm.StoredJob) bool {
		jobs = append(jobs, sj)
		return true
	})
	l.heap = newDueHeap(len(jobs))
	nowNs := now.UnixNano()
	for _, sj := range jobs {
		name := sj.Job.GetSpec().GetName()
		if len(sj.Status.GetOpenRunIds()) > 0 || sj.Status.GetBufferedSlotUnix() != 0 || sj.Status.GetDeferredSlotUnix() != 0 ||
			sj.Status.GetBackfill().GetState() == pb.BackfillState_BACKFILL_STATE_RUNNING {
			l.heap.add(name, nowNs)
			continue
		}
		sched, _ := jobSchedule(sj.Job)
		if at := firstWake(planInput{job: sj.Job, status: sj.Status, sched: sched, now: now}); !at.IsZero() {
			l.heap.add(name, at.UnixNano())
		}
	}
	l.heap.init()
	return len(jobs)
}

// sweepDeletedJobs re-dispatches the orphans of deleted jobs, which no job
// plan sees: the FSM closes them (cancelled, reason deleted).
func (l *leader) sweepDeletedJobs() {
	gone := make(map[string]bool)
	l.extra = l.orphansOf(func(name string) bool {
		g, seen := gone[name]
		if !seen {
			_, err := l.s.state.StoredJob(name)
			g = errors.Is(err, fsm.ErrNotFound)
			gone[name] = g
		}
		return g
	})
}

// orphansOf returns REDISPATCH fires for the runs of earlier terms, still
// DISPATCHED, of the jobs chosen.
func (l *leader) orphansOf(choose func(job string) bool) []*pb.Fire {
	var fires []*pb.Fire
	for _, r := range l.s.state.OpenRuns() {
		cur := fsm.CurrentAttempt(r)
		if r.GetState() == pb.RunState_RUN_STATE_DISPATCHED && cur != nil && cur.GetTerm() < l.term &&
			choose(r.GetJob()) {
			fires = append(fires, runFire(r, pb.FireKind_FIRE_KIND_REDISPATCH))
		}
	}
	return fires
}

func (l *leader) dueNow(now time.Time) int {
	n := 0
	for _, it := range l.heap.items {
		if it.at <= now.UnixNano() {
			n++
		}
	}
	return n
}

// sleep waits d on the scheduler's clock; false if the term ended first.
func (l *leader) sleep(d time.Duration) bool {
	c, stop := l.s.clock.WakeAt(l.s.clock.Now().Add(d))
	defer stop()
	select {
	case <-l.ctx.Done():
		return false
	case <-c:
		return true
	}
}

// pause waits d of real time, or until the term ends (false).
func (l *leader) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// forget is called by the completer once outcomes are committed.
func (l *leader) forget(tokens []uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgotten = append(l.forgotten, tokens...)
}

func (l *leader) drainForgotten() {
	l.mu.Lock()
	f := l.forgotten
	l.forgotten = nil
	l.mu.Unlock()
	for _, t := range f {
		delete(l.known, t)
	}
}

// isKnown reports whether token's attempt is in hand: handed to the
// hand-off, its outcome not committed yet. An attempt of this term by this
// node that is not was committed without this node learning it, and is
// adopted.
func (l *leader) isKnown(token uint64) bool {
	_, ok := l.known[token]
	return ok
}
