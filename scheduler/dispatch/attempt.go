package dispatch

import (
	"context"
	"strconv"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Attempt is one committed run attempt to deliver. Token is its fencing token.
type Attempt struct {
	Job         string
	RunID       string
	Token       uint64
	Number      uint32    // 1-based attempt number within the run
	ScheduledAt time.Time // the slot's nominal time
	HTTP        *pb.HttpTarget
	Exec        *pb.ExecTarget
	Worker      *pb.WorkerTarget
	Deadline    time.Duration // job-level max run duration, counted from the start of delivery; 0 = none
	// WaitUntil: a worker attempt that no worker of its pool has taken by
	// then fails with no_worker (the job's deadline, or the catch-up window
	// of a scheduled slot).
	WaitUntil time.Time
}

// IdempotencyKey is "<job>/<scheduled-at>": it names the slot, not the
// attempt, so every attempt of a run carries the same key and a receiver can
// de-duplicate retries and re-dispatches.
func (a Attempt) IdempotencyKey() string { return a.idempotencyKey(a.scheduledAt()) }

// idempotencyKey is IdempotencyKey given scheduledAt's result.
func (a Attempt) idempotencyKey(scheduledAt string) string { return a.Job + "/" + scheduledAt }

// scheduledAt is the slot time as sent downstream: RFC 3339, UTC, whole
// seconds (slots have second precision, see the fire protocol).
func (a Attempt) scheduledAt() string {
	return a.ScheduledAt.UTC().Truncate(time.Second).Format(time.RFC3339)
}

func (a Attempt) token() string  { return strconv.FormatUint(a.Token, 10) }
func (a Attempt) number() string { return strconv.FormatUint(uint64(a.Number), 10) }

// Outcome is what became of one attempt.
type Outcome struct {
	State      pb.RunState // SUCCEEDED, FAILED, FENCED, DEADLINE_EXCEEDED or CANCELLED
	Detail     string      // one line, valid UTF-8, at most proc.MaxDetail bytes
	Output     []byte      // at most the first MaxOutput bytes of response body (if kept) / combined stdout+stderr
	Reason     string      // set when the node refused the attempt by its policy: ReasonExecDenied, ReasonEgressDenied
	StartedAt  time.Time
	FinishedAt time.Time
	// Lost: the attempt's worker missed its lease or its stream broke, so
	// nobody knows what became of it; State is not set. The scheduler
	// re-dispatches it (at_least_once) or gives it up (at_most_once).
	Lost bool
}

// Executor delivers one attempt and reports its outcome. Cancelling ctx
// cancels the attempt; Execute returns only once the attempt is over (the
// request aborted, the process group killed and reaped).
type Executor interface {
	Execute(ctx context.Context, a Attempt) Outcome
}

// MaxOutput is how much output an attempt keeps (proc.MaxOutput): the run
// record travels through the Raft log, so it must stay small whatever the
// target prints.
const MaxOutput = proc.MaxOutput

// finish stamps the end of an attempt.
func finish(o Outcome, state pb.RunState, detail string) Outcome {
	o.State = state
	o.Detail = proc.OneLine(detail)
	if o.FinishedAt.IsZero() {
		o.FinishedAt = time.Now()
	}
	return o
}
