package dispatch

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/raftcron/raftcron/fence"
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
	// Kind is why the run's first attempt was fired (pb.Run.kind), the
	// same for every attempt of the run: it decides the form of the run's
	// idempotency key. The zero value counts as a slot of the schedule.
	Kind pb.FireKind
	// WaitUntil: a worker attempt that no worker of its pool has taken by
	// then fails with no_worker (the job's deadline, or the catch-up window
	// of a scheduled slot).
	WaitUntil time.Time
	// ParentRuns are the parents of a chained run, as
	// fence.HeaderParentRuns carries them; "" for any other run.
	ParentRuns string
	// Payload is a manual run's payload (job trigger --payload): an exec
	// run gets it as RAFTCRON_PAYLOAD. An http or worker attempt carries it
	// in its target already, as the body or the worker's payload.
	Payload string
}

// EnvPayload is the variable that holds a manual run's payload for exec.
const EnvPayload = "RAFTCRON_PAYLOAD"

// IdempotencyKey names the run, never the attempt, so every attempt of a
// run carries the same key and a receiver can de-duplicate retries and
// re-dispatches; and no two runs share one. A run that fires a slot of its
// job's schedule is named by the slot (G1: one run per slot),
// fence.SlotKey "<job>/<scheduled-at>". Any other run is named by its id,
// fence.RunKey "<job>/manual/<run id>": its scheduled-at is only the second
// it was fired in, which a slot or another trigger may share.
func (a Attempt) IdempotencyKey() string { return a.idempotencyKey(a.scheduledAt()) }

// idempotencyKey is IdempotencyKey given scheduledAt's result.
func (a Attempt) idempotencyKey(scheduledAt string) string {
	if word, ok := runKeyWords[a.Kind]; ok {
		return fence.RunKey(a.Job, word, a.RunID)
	}
	return a.Job + "/" + scheduledAt // fence.SlotKey, the time formatted once
}

// slotKinds are the fire kinds, by their proto names, whose runs are slots
// of the schedule and keep the slot's key: scheduled and catch-up fires,
// and backfill, which fires a past slot again. Retry and re-dispatch name
// attempts, never runs (a run keeps the kind of its first attempt); they
// are here for an attempt given its own kind. Every other kind (manual,
// chained) is named by its run. Naming kinds by their names, a kind added
// to the proto follows this rule without a change here.
var slotKinds = map[string]bool{
	"FIRE_KIND_UNSPECIFIED": true,
	"FIRE_KIND_SCHEDULED":   true,
	"FIRE_KIND_CATCHUP":     true,
	"FIRE_KIND_RETRY":       true,
	"FIRE_KIND_REDISPATCH":  true,
	"FIRE_KIND_BACKFILL":    true,
}

// runKeyWords holds the word in the key of each kind named by its run:
// "FIRE_KIND_MANUAL" is "manual".
var runKeyWords = func() map[pb.FireKind]string {
	words := map[pb.FireKind]string{}
	for v, name := range pb.FireKind_name {
		if word, ok := runKeyWord(name); ok {
			words[pb.FireKind(v)] = word
		}
	}
	return words
}()

// runKeyWord is the word of the fire kind named name in its runs' keys,
// and false if its runs keep their slot's key.
func runKeyWord(name string) (string, bool) {
	if slotKinds[name] {
		return "", false
	}
	return strings.ToLower(strings.TrimPrefix(name, "FIRE_KIND_")), true
}

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
