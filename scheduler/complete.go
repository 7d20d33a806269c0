package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// maxCompletionsPerEntry caps one CompleteBatch entry; the same size
	// as a FireBatch entry, so a wave's outcomes take about as many entries
	// as its fires.
	maxCompletionsPerEntry = 2000
	// maxCompletionHold bounds how long outcomes wait while deliveries
	// wait (see completer.hold): longer than a 10,000 burst's deliveries
	// last on two cores (350 ms), so that its outcomes follow them.
	maxCompletionHold = 500 * time.Millisecond
	// holdPoll is how often a holding completer looks at the queue again.
	holdPoll = 10 * time.Millisecond
	// completeRetry is the pause after a CompleteBatch proposal failed
	// while this node still leads.
	completeRetry = 500 * time.Millisecond
)

// completer proposes attempt outcomes as CompleteBatch entries, one term
// long. It commits in groups: while one proposal is in flight the next
// outcomes gather, and they go out together as soon as it returns. Under
// load that batches as much as a timer would, without adding its delay when
// idle. While deliveries wait for a pool worker it holds outcomes back (see
// hold): committing them costs CPU on every node, and a delivery that waits
// for that CPU is a late fire, while an outcome committed later is not.
type completer struct {
	// mu guards queue, since and closed; add is called from pool workers.
	mu    sync.Mutex
	queue []pendingCompletion
	// since is when the oldest queued outcome arrived (real time: the
	// hold is about CPU, not about the schedule's clock).
	since  time.Time
	closed bool
	wake   chan struct{} // cap 1
}

type pendingCompletion struct {
	job string
	c   *pb.Completion
}

func newCompleter() *completer {
	return &completer{wake: make(chan struct{}, 1)}
}

func completion(a dispatch.Attempt, o dispatch.Outcome) *pb.Completion {
	c := &pb.Completion{
		RunId:   a.RunID,
		Token:   a.Token,
		Outcome: o.State,
		Detail:  o.Detail,
		Output:  o.Output,
		Reason:  o.Reason,
	}
	if !o.StartedAt.IsZero() {
		c.StartedAtUnixNano = o.StartedAt.UnixNano()
	}
	if !o.FinishedAt.IsZero() {
		c.FinishedAtUnixNano = o.FinishedAt.UnixNano()
	}
	return c
}

// add queues an outcome; false once the term is over.
func (c *completer) add(job string, comp *pb.Completion) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if len(c.queue) == 0 {
		c.since = time.Now()
	}
	c.queue = append(c.queue, pendingCompletion{job: job, c: comp})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// hold reports whether the queued outcomes should wait: while deliveries
// wait (busy: see leader.deliveriesWait), until the oldest has waited
// maxCompletionHold. A wave's outcomes start to come back while its later
// fires are still being committed; every outcome entry committed then
// takes its turn in the FSM, and CPU on every node, ahead of them. The wait
// delays only the commit of outcomes, which no fire waits for; what it
// risks is bounded by the hold: a leader that dies holding outcomes leaves
// those runs to the next leader, like any attempt it had not reported yet.
func (c *completer) hold(busy bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return busy && len(c.queue) > 0 && time.Since(c.since) < maxCompletionHold
}

// take removes up to max queued outcomes.
func (c *completer) take(max int) []pendingCompletion {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.queue), max)
	out := make([]pendingCompletion, n)
	copy(out, c.queue)
	rest := copy(c.queue, c.queue[n:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	if rest > 0 {
		c.since = time.Now() // what is left waits afresh, at most one more hold
	}
	return out
}

// putBack returns outcomes whose proposal failed to the front of the queue.
func (c *completer) putBack(p []pendingCompletion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.since = time.Now()
	}
	c.queue = append(p, c.queue...)
}

// close stops accepting outcomes; the queued ones are dropped with the term
// (the next leader re-dispatches what they belonged to).
func (c *completer) close() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	n := len(c.queue)
	c.queue = nil
	return n
}

// runCompleter proposes outcomes until the term ends.
func (l *leader) runCompleter(c *completer) {
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-c.wake:
		}
		proposed := false
		for {
			if c.hold(l.deliveriesWait()) {
				if !l.pause(holdPoll) {
					return
				}
				continue
			}
			batch := c.take(maxCompletionsPerEntry)
			if len(batch) == 0 {
				break
			}
			if !l.proposeCompletions(batch) {
				c.putBack(batch)
				if !l.sleep(completeRetry) {
					return
				}
				continue
			}
			proposed = true
		}
		if proposed && !l.deliveriesWait() {
			l.announceCommit()
		}
	}
}

// announceCommit tells the followers that the outcomes just proposed
// committed. They would learn it only with the next entry, often the next
// wave's first fires, or Raft's commit timer, and apply the outcomes then,
// a core each for tens of milliseconds, during that wave's deliveries.
// While deliveries wait the next entry comes soon enough, and told now the
// followers would apply during those deliveries: so only when none wait.
func (l *leader) announceCommit() {
	ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
	defer cancel()
	l.s.prop.AnnounceCommit(ctx)
}

// deliveriesWait reports whether attempts are on their way to a worker:
// a tick's fires are being committed and handed over, deliveries are
// queued for a pool worker, or offers to remote workers are not yet
// acknowledged.
func (l *leader) deliveriesWait() bool {
	return l.firing.Load() || l.s.handoff.backlog() > 0
}

// proposeCompletions commits one CompleteBatch; false if the proposal
// failed and should be retried.
func (l *leader) proposeCompletions(batch []pendingCompletion) bool {
	cmd := &pb.Command{
		ProposedAtUnixNano: l.s.clock.Now().UnixNano(),
		Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
			Completions: make([]*pb.Completion, len(batch)),
			// The chained runs the outcomes fire are this term's attempts,
			// adopted by the next plan of their jobs (chain.go).
			LeaderId:    l.s.self,
			Term:        l.term,
			MaxOpenRuns: l.s.maxOpenRuns,
		}},
	}
	for i, p := range batch {
		cmd.GetCompleteBatch().Completions[i] = p.c
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
	res, err := l.s.prop.Apply(ctx, cmd)
	cancel()
	if err == nil && res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		// A refused batch is a bug, not a transient fault: retrying it
		// would loop. Drop it; the runs stay open for the next leader.
		l.s.log.Error("complete batch refused", "code", res.GetCode().String(), "message", res.GetMessage(), "completions", len(batch))
		l.afterCompletions(batch, nil)
		return true
	}
	if err != nil {
		if l.ctx.Err() == nil {
			l.s.log.Warn("complete batch not committed; retrying", "error", err, "completions", len(batch))
		}
		return false
	}
	l.afterCompletions(batch, res.GetCompletions())
	l.chained(res.GetChained())
	return true
}

// afterCompletions forgets the attempts whose outcome is now committed (or
// refused for good) and re-plans their jobs: a retry, a buffered slot or a
// held catch-up slot may now be due.
func (l *leader) afterCompletions(batch []pendingCompletion, results []*pb.CompletionResult) {
	tokens := make([]uint64, len(batch))
	names := make([]string, len(batch))
	for i, p := range batch {
		tokens[i], names[i] = p.c.GetToken(), p.job
		if i < len(results) && !results[i].GetAccepted() {
			l.s.log.Debug("completion not recorded", "job", p.job, "run_id", p.c.GetRunId(),
				"token", p.c.GetToken(), "reason", results[i].GetReason())
		}
	}
	l.forget(tokens)
	l.s.markDirty(names...)
	l.unsettled.Add(-int64(len(batch)))
}

// completed takes an attempt's outcome from the hand-off, on a pool
// worker. Once the term is over the outcome is dropped: an attempt cut
// short by the leadership loss must stay open for the next leader, which
// re-dispatches it (at_least_once) or marks it unknown (at_most_once).
func (l *leader) completed(t *task, o dispatch.Outcome) {
	if l.ctx.Err() != nil {
		return
	}
	l.unsettled.Add(1)
	if !l.comp.add(t.a.Job, completion(t.a, o)) {
		l.unsettled.Add(-1)
	}
}
