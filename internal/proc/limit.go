package proc

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// limitError is the cause attached to an attempt's context when one of its
// time limits runs out, so that the outcome can say which one did: the job's
// deadline ends the run (DEADLINE_EXCEEDED), the target's timeout only fails
// this attempt (FAILED, retryable).
type limitError struct {
	jobDeadline bool
	d           time.Duration
}

func (e *limitError) Error() string {
	if e.jobDeadline {
		return fmt.Sprintf("deadline %s exceeded", e.d)
	}
	return fmt.Sprintf("timeout after %s", e.d)
}

// WithLimit bounds an attempt by the shorter of the job deadline and the
// target timeout (zero or negative = none). On a tie the job deadline wins:
// the run is over either way.
func WithLimit(parent context.Context, jobDeadline, targetTimeout time.Duration) (context.Context, context.CancelFunc) {
	var cause *limitError
	switch {
	case jobDeadline > 0 && (targetTimeout <= 0 || jobDeadline <= targetTimeout):
		cause = &limitError{jobDeadline: true, d: jobDeadline}
	case targetTimeout > 0:
		cause = &limitError{d: targetTimeout}
	default:
		return context.WithCancel(parent)
	}
	return context.WithTimeoutCause(parent, cause.d, cause)
}

// Interrupted says how an attempt ended if its context did: CANCELLED when
// the caller's context (parent) was cancelled, the limit's verdict when a
// limit ran out. ok is false while ctx is still live.
func Interrupted(parent, ctx context.Context) (state pb.RunState, detail string, ok bool) {
	if parent.Err() != nil {
		return pb.RunState_RUN_STATE_CANCELLED, "cancelled: " + context.Cause(parent).Error(), true
	}
	if ctx.Err() == nil {
		return 0, "", false
	}
	cause := context.Cause(ctx)
	var le *limitError
	if errors.As(cause, &le) && le.jobDeadline {
		return pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, le.Error(), true
	}
	return pb.RunState_RUN_STATE_FAILED, cause.Error(), true
}
