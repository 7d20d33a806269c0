package worker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// attempt is one offered attempt on this worker, from its offer to its
// outcome. A tick can offer thousands at once, so an attempt costs one
// goroutine, one context and one timer: its context ends on the leader's
// cancel, the end of the session or its limit, and a handler's outcome is
// reported then, without waiting for the handler to return.
type attempt struct {
	s      *session
	a      *pb.WorkerAttempt
	ctx    context.Context
	cancel context.CancelCauseFunc
	// limit ends a handler's context at its limit (a command's runs under
	// proc.WithLimit instead, which proc.Run reads); nil when it has none.
	// Atomic: a short limit may run out before start has stored it.
	limit    atomic.Pointer[time.Timer]
	reported atomic.Bool
}

// newAttempt is a, not started yet. Its context carries the values of
// the session's but not its cancellation, which stopAll passes on when the
// session ends: thousands of children of one context would all take its
// lock to start and again to finish.
func (s *session) newAttempt(a *pb.WorkerAttempt) *attempt {
	ctx, cancel := context.WithCancelCause(s.base)
	return &attempt{s: s, a: a, ctx: ctx, cancel: cancel}
}

// start arms the attempt's limit and runs it on a goroutine of its own.
// The session holds it by then, so that it finds the attempt when it ends.
func (at *attempt) start() {
	if at.handler() {
		if d, cause := proc.Limit(at.a.GetDeadline().AsDuration(), at.a.GetTarget().GetTimeout().AsDuration()); d > 0 {
			t := time.AfterFunc(d, func() { at.interrupt(cause) })
			at.limit.Store(t)
			if at.reported.Load() {
				t.Stop() // the leader cancelled it meanwhile, and finish found no timer
			}
		}
	}
	go at.run()
}

func (at *attempt) handler() bool { return at.a.GetTarget().GetHandler() != "" }

// interrupt ends the attempt's context with cause (the leader's cancel, its
// limit). A handler's attempt is reported at once, for whatever ended its
// context first (the session's end, say); a command's once its process
// group is gone.
func (at *attempt) interrupt(cause error) {
	at.cancel(cause)
	if at.handler() {
		state, detail := interruptedBy(context.Cause(at.ctx))
		at.report(state, detail, nil)
	}
}

// interruptedBy is the verdict on an attempt whose context ended with cause.
func interruptedBy(cause error) (pb.RunState, string) {
	if state, detail, ok := proc.LimitVerdict(cause); ok {
		return state, detail
	}
	return pb.RunState_RUN_STATE_CANCELLED, "cancelled: " + cause.Error()
}

// run runs the attempt and reports it. The two kinds run in functions of
// their own: the frame of each stays small, and an attempt's goroutine
// does not outgrow its first stack (growing copies it, each time).
func (at *attempt) run() {
	if at.handler() {
		at.runHandler()
	} else {
		at.runCommand()
	}
}

func (at *attempt) runCommand() {
	w := at.s.w
	if err := w.refusal(at.a); err != nil {
		at.finish(&pb.WorkerOutcome{State: pb.RunState_RUN_STATE_FAILED, Detail: err.Error(), Reason: ReasonExecDenied})
		return
	}
	t := at.a.GetTarget()
	lctx, cancel := proc.WithLimit(at.ctx, at.a.GetDeadline().AsDuration(), t.GetTimeout().AsDuration())
	defer cancel()
	at.report(w.runCommand(at.ctx, lctx, at.a))
}

func (at *attempt) runHandler() {
	w := at.s.w
	name := at.a.GetTarget().GetHandler()
	h, ok := w.handlers[name]
	if !ok {
		at.noHandler(name)
		return
	}
	defer func() {
		if r := recover(); r != nil {
			at.report(at.handlerVerdict(h, fmt.Errorf("handler %s panicked: %v", name, r)))
		}
	}()
	run := w.run(at.a)
	run.at = at
	at.report(at.handlerVerdict(h, h.fn(at.ctx, run)))
}

func (at *attempt) noHandler(name string) {
	at.report(pb.RunState_RUN_STATE_FAILED, fmt.Sprintf("no handler %q on this worker", name), nil)
}

// handlerVerdict is what a handler's return means.
func (at *attempt) handlerVerdict(h handler, err error) (pb.RunState, string, []byte) {
	switch {
	case err == nil:
		return pb.RunState_RUN_STATE_SUCCEEDED, h.succeeded, nil
	case stale(err):
		return pb.RunState_RUN_STATE_FENCED, err.Error(), nil
	case at.ctx.Err() != nil:
		state, detail := interruptedBy(context.Cause(at.ctx))
		return state, detail, nil
	}
	return pb.RunState_RUN_STATE_FAILED, err.Error(), nil
}

// stale reports whether err says that a newer attempt exists. On its own,
// since the target errors.As fills in goes to the heap: an attempt that
// succeeds does not pay for it.
func stale(err error) bool {
	var se *fence.StaleError
	return errors.As(err, &se) || errors.Is(err, fence.ErrStale)
}

// report hands the attempt's outcome to the session, once.
func (at *attempt) report(state pb.RunState, detail string, output []byte) {
	at.finish(&pb.WorkerOutcome{State: state, Detail: detail, Output: output})
}

// finish is report with the whole outcome; it fills in the attempt's
// identity.
func (at *attempt) finish(o *pb.WorkerOutcome) {
	if !at.reported.CompareAndSwap(false, true) {
		return
	}
	if t := at.limit.Load(); t != nil {
		t.Stop()
	}
	o.RunId, o.Token, o.Detail = at.a.GetRunId(), at.a.GetToken(), proc.OneLine(o.GetDetail())
	at.s.finished(at, o)
}
