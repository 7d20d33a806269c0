package worker

import (
	"regexp"
	"time"

	"github.com/raftcron/raftcron/fence"

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
	// IdempotencyKey names the run ("<job>/<scheduled-at>" for a slot of
	// the schedule, "<job>/manual/<run id>" for a manual run): the same for
	// every attempt of the run and no other run's. De-duplicate on it.
	IdempotencyKey string
	// Signature is set when the cluster signs its dispatches: v2 over
	// Dispatch (v1 over the run while the cluster version is below 3).
	Signature string
	// Payload is the job's worker.payload.
	Payload string
	// Worker is this worker's ID.
	Worker string
	// ParentRuns are a chained run's parents, as fence.HeaderParentRuns
	// spells them ("RUN_ID@TOKEN,..."); empty for any other run.
	// fence.ParseParentRuns reads them.
	ParentRuns string

	// at is the attempt the run reports progress for; nil in a Run made
	// by hand (a test's), whose Progress does nothing.
	at *attempt
}

// Progress reports how far the attempt has come: percent (0-100; beyond
// it counts as the nearest end) and a short message (the leader keeps its
// first 256 bytes). It never blocks: the worker sends each attempt's
// latest report to the leader at most once a second, which records it in
// the run (`raftcron run get`, the web UI). A leader of an earlier release
// takes no progress; the report is then dropped.
func (r Run) Progress(percent int, message string) {
	if r.at == nil {
		return
	}
	pct := uint32(min(max(percent, 0), 100))
	r.at.s.report(r.at, &pb.AttemptProgress{RunId: r.RunID, Token: r.Token, Progress: &pct, Message: &message})
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

// Dispatch is what the run's signature covers: the run and its payload
// (fence.ExecDispatch). Verify it with fence.NewVerifier(keys).Verify(
// run.Dispatch(), run.Signature), or pass both on to a service that does.
func (r Run) Dispatch() fence.Dispatch {
	return fence.ExecDispatch(r.Fence(), []byte(r.Payload))
}

var handlerPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}$`)

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
		ParentRuns:     a.GetParentRuns(),
	}
}
