package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Run is one committed attempt, as a handler receives it.
type Run struct {
	Job   string
	RunID string
	// ScheduledAt is the slot's nominal time, UTC, whole seconds.
	ScheduledAt time.Time
	// Attempt is 1-based within the run.
	Attempt uint32
	// Token is this attempt's fencing token: larger than any earlier
	// attempt's, of any job. Fence every write with it.
	Token uint64
	// IdempotencyKey is "<job>/<scheduled-at>", the same for every attempt
	// of the run: de-duplicate on it.
	IdempotencyKey string
	// Signature is set when the cluster signs its dispatches.
	Signature string
	// Payload is the job's worker.payload.
	Payload string
	// Worker is this worker's ID.
	Worker string
}

// Fence is the run as the fence package takes it: guard a write with
// fence.Fence.Do(ctx, run.Fence(), scope, effect) for an exactly-once
// effect.
func (r Run) Fence() fence.Run {
	return fence.Run{
		Token:          r.Token,
		Job:            r.Job,
		RunID:          r.RunID,
		IdempotencyKey: r.IdempotencyKey,
		ScheduledAt:    r.ScheduledAt,
		Attempt:        r.Attempt,
	}
}

var handlerPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}$`)

// runAttempt runs one offered attempt within its limits and says what it
// came to.
func (w *Worker) runAttempt(ctx context.Context, a *pb.WorkerAttempt) *pb.WorkerOutcome {
	t := a.GetTarget()
	lctx, cancel := proc.WithLimit(ctx, a.GetDeadline().AsDuration(), t.GetTimeout().AsDuration())
	defer cancel()
	var state pb.RunState
	var detail string
	var output []byte
	if t.GetHandler() != "" {
		state, detail = w.runHandler(ctx, lctx, a)
	} else {
		state, detail, output = w.runCommand(ctx, lctx, a)
	}
	return &pb.WorkerOutcome{
		RunId:  a.GetRunId(),
		Token:  a.GetToken(),
		State:  state,
		Detail: proc.OneLine(detail),
		Output: output,
	}
}

// runHandler calls the handler and reports when it returns, or as soon as
// its context ends, whichever comes first.
func (w *Worker) runHandler(parent, ctx context.Context, a *pb.WorkerAttempt) (pb.RunState, string) {
	name := a.GetTarget().GetHandler()
	w.mu.Lock()
	h := w.handlers[name]
	w.mu.Unlock()
	if h == nil {
		return pb.RunState_RUN_STATE_FAILED, fmt.Sprintf("no handler %q on this worker", name)
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("handler %s panicked: %v", name, r)
			}
		}()
		done <- h(ctx, w.run(a))
	}()
	select {
	case err := <-done:
		var stale *fence.StaleError
		switch {
		case err == nil:
			return pb.RunState_RUN_STATE_SUCCEEDED, "handler " + name + " succeeded"
		case errors.As(err, &stale) || errors.Is(err, fence.ErrStale):
			return pb.RunState_RUN_STATE_FENCED, err.Error()
		}
		if state, detail, ok := proc.Interrupted(parent, ctx); ok {
			return state, detail
		}
		return pb.RunState_RUN_STATE_FAILED, err.Error()
	case <-ctx.Done():
		state, detail, _ := proc.Interrupted(parent, ctx)
		return state, detail
	}
}

func (w *Worker) run(a *pb.WorkerAttempt) Run {
	return Run{
		Job:            a.GetJob(),
		RunID:          a.GetRunId(),
		ScheduledAt:    time.Unix(a.GetSlotUnix(), 0).UTC(),
		Attempt:        a.GetAttempt(),
		Token:          a.GetToken(),
		IdempotencyKey: a.GetIdempotencyKey(),
		Signature:      a.GetSignature(),
		Payload:        a.GetTarget().GetPayload(),
		Worker:         w.cfg.ID,
	}
}
