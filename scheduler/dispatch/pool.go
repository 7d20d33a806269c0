package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

var (
	// ErrQueueFull is returned by Submit when every worker is busy and the
	// queue is full. The attempt was not accepted.
	ErrQueueFull = errors.New("dispatch: queue full")
	// ErrClosed is returned by Submit after Close.
	ErrClosed = errors.New("dispatch: pool closed")
)

// Pool delivers attempts on a bounded set of worker goroutines fed by a
// bounded queue. Submit never blocks, so the scheduler's loop (and with it
// every other job's fire time) never waits on a slow target; a slow target
// occupies one worker until its own limits end it.
type Pool struct {
	ex    Executor
	now   func() time.Time
	queue chan task
	wg    sync.WaitGroup

	// inFlight counts accepted attempts whose done has not returned yet
	// (queued or running). It is raised before the send, so it never dips
	// below the truth.
	inFlight atomic.Int64

	mu     sync.Mutex // guards closed and every send on queue, so Close never closes it mid-send
	closed bool
}

type task struct {
	ctx  context.Context
	a    Attempt
	done func(Attempt, Outcome)
}

// NewPool starts workers goroutines (at least 1) delivering through ex, with
// room for queue waiting attempts (0 = accept only when a worker is idle).
// now stamps the outcomes the pool makes itself and fills times an executor
// left zero; nil means time.Now.
func NewPool(workers, queue int, ex Executor, now func() time.Time) *Pool {
	if now == nil {
		now = time.Now
	}
	p := &Pool{ex: ex, now: now, queue: make(chan task, max(queue, 0))}
	for range max(workers, 1) {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

// Submit queues a for delivery under ctx and returns at once. done, if not
// nil, is called exactly once per accepted attempt, from a worker goroutine,
// with the outcome; it must not block for long (it holds the worker) and
// must not call Close. Cancelling ctx cancels the attempt, also while it is
// still queued: a queued attempt whose ctx is done is reported CANCELLED
// without being delivered.
func (p *Pool) Submit(ctx context.Context, a Attempt, done func(Attempt, Outcome)) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.inFlight.Add(1)
	select {
	case p.queue <- task{ctx: ctx, a: a, done: done}:
		return nil
	default:
		p.inFlight.Add(-1)
		return ErrQueueFull
	}
}

// Queued is the number of accepted attempts waiting for a worker.
func (p *Pool) Queued() int { return len(p.queue) }

// InFlight is the number of accepted attempts not yet reported: queued or
// being delivered.
func (p *Pool) InFlight() int { return int(p.inFlight.Load()) }

// Close stops accepting attempts and waits until every accepted one has been
// reported. Attempts still queued are delivered unless their context is
// done; cancel their contexts first for a prompt stop.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Pool) work() {
	defer p.wg.Done()
	for t := range p.queue {
		out := p.deliver(t)
		if t.done != nil {
			t.done(t.a, out)
		}
		p.inFlight.Add(-1)
	}
}

// deliver runs one attempt, turning a panic in the executor into a failed
// outcome: one broken attempt must not take the node down.
func (p *Pool) deliver(t task) (out Outcome) {
	start := p.now()
	if p.ex == nil {
		return Outcome{State: pb.RunState_RUN_STATE_FAILED, Detail: "no executor", StartedAt: start, FinishedAt: start}
	}
	if err := t.ctx.Err(); err != nil {
		return Outcome{
			State:      pb.RunState_RUN_STATE_CANCELLED,
			Detail:     proc.OneLine("cancelled: " + context.Cause(t.ctx).Error() + " (never started)"),
			StartedAt:  start,
			FinishedAt: start,
		}
	}
	defer func() {
		if r := recover(); r != nil {
			out = Outcome{
				State:      pb.RunState_RUN_STATE_FAILED,
				Detail:     proc.OneLine(fmt.Sprintf("internal error: executor panicked: %v", r)),
				StartedAt:  start,
				FinishedAt: p.now(),
			}
		}
	}()
	out = p.ex.Execute(t.ctx, t.a)
	if out.StartedAt.IsZero() {
		out.StartedAt = start
	}
	if out.FinishedAt.IsZero() {
		out.FinishedAt = p.now()
	}
	return out
}
