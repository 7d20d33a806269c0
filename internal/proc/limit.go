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

// Limit is the limit an attempt runs under: the shorter of the job
// deadline and the target timeout (zero or negative = none; on a tie the
// job deadline wins: the run is over either way), and the cause its context
// ends with when it runs out. d is 0 when there is none.
func Limit(jobDeadline, targetTimeout time.Duration) (d time.Duration, cause error) {
	switch {
	case jobDeadline > 0 && (targetTimeout <= 0 || jobDeadline <= targetTimeout):
		return jobDeadline, &limitError{jobDeadline: true, d: jobDeadline}
	case targetTimeout > 0:
		return targetTimeout, &limitError{d: targetTimeout}
	}
	return 0, nil
}

// WithLimit bounds an attempt by its Limit.
func WithLimit(parent context.Context, jobDeadline, targetTimeout time.Duration) (context.Context, context.CancelFunc) {
	d, cause := Limit(jobDeadline, targetTimeout)
	if d == 0 {
		return context.WithCancel(parent)
	}
	return context.WithTimeoutCause(parent, d, cause)
}

// LimitVerdict says how an attempt ended when cause is its Limit running
// out: the job's deadline ends the run, the target's timeout fails the
// attempt. ok is false for any other cause.
func LimitVerdict(cause error) (state pb.RunState, detail string, ok bool) {
	var le *limitError
	if !errors.As(cause, &le) {
		return 0, "", false
	}
	if le.jobDeadline {
		return pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, le.Error(), true
	}
	return pb.RunState_RUN_STATE_FAILED, le.Error(), true
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
	if state, detail, ok := LimitVerdict(cause); ok {
		return state, detail, true
	}
	return pb.RunState_RUN_STATE_FAILED, cause.Error(), true
}
