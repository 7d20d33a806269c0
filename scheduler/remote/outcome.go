package remote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ReasonNoWorker starts the detail of an attempt that no worker of its
// pool took in time (DESIGN §14).
const ReasonNoWorker = "no_worker"

// wireAttempt is an attempt as offered to a worker, signed by signer if
// the cluster signs its dispatches. Its limits are the leader's: a target
// without a timeout goes with the default timeout the node's own command
// would get (dispatch.Attempt.Limits), so that no worker holds an attempt
// forever.
func wireAttempt(a dispatch.Attempt, signer *dispatch.Signer) *pb.WorkerAttempt {
	w := &pb.WorkerAttempt{
		Job:            a.Job,
		RunId:          a.RunID,
		SlotUnix:       a.ScheduledAt.Unix(),
		Attempt:        a.Number,
		Token:          a.Token,
		IdempotencyKey: a.IdempotencyKey(),
		Target:         a.Worker,
		ParentRuns:     a.ParentRuns,
	}
	deadline, timeout := a.Limits()
	if deadline > 0 {
		w.Deadline = durationpb.New(deadline)
	}
	if timeout > 0 && a.Worker.GetTimeout() == nil {
		// The spec is shared with the FSM: the default goes on a copy.
		t := proto.CloneOf(a.Worker)
		t.Timeout = durationpb.New(timeout)
		w.Target = t
	}
	if signer != nil {
		w.Signature = signer.SignRun(a.FenceRun(), []byte(a.Worker.GetPayload()))
	}
	return w
}

// httpOffer is an attempt as offered to an HTTP worker: wireAttempt's
// content, with its limit and lease as instants on the leader's clock and
// as lengths from the offer, and the RAFTCRON_* variables a command would
// get.
func httpOffer(at *attempt, signer *dispatch.Signer) *pb.AttemptOffer {
	a := at.a
	run := a.FenceRun()
	o := &pb.AttemptOffer{
		RunId:          a.RunID,
		Job:            a.Job,
		Slot:           timestamppb.New(run.ScheduledAt),
		Attempt:        a.Number,
		Token:          a.Token,
		Payload:        a.Worker.GetPayload(),
		Handler:        a.Worker.GetHandler(),
		IdempotencyKey: run.IdempotencyKey,
		LeaseExpires:   timestamppb.New(at.leaseUntil),
		Lease:          durationpb.New(at.leaseUntil.Sub(at.offeredAt)),
		Env:            make(map[string]string, 7),
	}
	if limit, _ := proc.Limit(a.Limits()); limit > 0 {
		o.Limit = durationpb.New(limit)
		o.Deadline = timestamppb.New(at.offeredAt.Add(limit))
	}
	for _, kv := range run.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		o.Env[k] = v
	}
	if signer != nil {
		o.Signature = signer.SignRun(run, []byte(a.Worker.GetPayload()))
		o.Env[fence.EnvSignature] = o.Signature
	}
	return o
}

// limitVerdict is what an HTTP worker's deadline_exceeded means: the
// attempt's limit ran out, which is the job's deadline exceeded, or a
// failure when the target's timeout was the limit (as for a node's own
// executors and the Go SDK).
func limitVerdict(a dispatch.Attempt, o *pb.WorkerOutcome) *pb.WorkerOutcome {
	if o.GetState() != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED {
		return o
	}
	_, cause := proc.Limit(a.Limits())
	state, detail, ok := proc.LimitVerdict(cause)
	if !ok {
		return o
	}
	reported := o.GetDetail()
	o = proto.CloneOf(o)
	o.State, o.Detail = state, detail
	if reported != "" {
		o.Detail += ": " + reported
	}
	return o
}

// outcome turns what a worker reported into the attempt's outcome. Times
// are the leader's (offer and receipt), not the worker's clock: the FSM
// schedules retries from them. A cancel the leader did not ask for means
// the worker gave the attempt up: it is lost, not cancelled.
func outcome(worker string, at *attempt, o *pb.WorkerOutcome, now time.Time) dispatch.Outcome {
	out := dispatch.Outcome{
		State:      o.GetState(),
		Detail:     proc.OneLine("worker " + worker + ": " + o.GetDetail()),
		Output:     o.GetOutput(),
		StartedAt:  at.offeredAt,
		FinishedAt: now,
	}
	if len(out.Output) > proc.MaxOutput {
		out.Output = out.Output[:proc.MaxOutput]
	}
	switch o.GetState() {
	case pb.RunState_RUN_STATE_FAILED:
		// The one reason a worker gives: its own policy refused the
		// command. Any other could only stop the run's retries, so it is
		// not taken.
		if o.GetReason() == dispatch.ReasonExecDenied {
			out.Reason = dispatch.ReasonExecDenied
		}
	case pb.RunState_RUN_STATE_SUCCEEDED, pb.RunState_RUN_STATE_FENCED,
		pb.RunState_RUN_STATE_DEADLINE_EXCEEDED:
	case pb.RunState_RUN_STATE_CANCELLED:
		if !at.cancelled {
			return dispatch.Outcome{Lost: true, Detail: out.Detail}
		}
	default:
		out.State = pb.RunState_RUN_STATE_FAILED
		out.Detail = proc.OneLine(fmt.Sprintf("worker %s reported %s, which is no outcome", worker, o.GetState()))
	}
	return out
}

// noWorker is the outcome of an attempt no worker took before its wait ran
// out.
func noWorker(at *attempt, now time.Time) dispatch.Outcome {
	w := at.a.Worker
	what := "a command"
	if w.GetHandler() != "" {
		what = "handler " + w.GetHandler()
	}
	detail := fmt.Sprintf("%s: no worker of pool %s", ReasonNoWorker, w.GetPool())
	if len(w.GetTags()) > 0 {
		detail += fmt.Sprintf(" with tags %v", w.GetTags())
	}
	detail += fmt.Sprintf(" running %s had room for it by %s", what, at.a.WaitUntil.UTC().Format(time.RFC3339))
	return dispatch.Outcome{State: pb.RunState_RUN_STATE_FAILED, Detail: proc.OneLine(detail), StartedAt: now, FinishedAt: now}
}

// notStarted is the outcome of an attempt cancelled before any worker took
// it.
func notStarted(cause error) dispatch.Outcome {
	now := time.Now()
	return dispatch.Outcome{
		State:      pb.RunState_RUN_STATE_CANCELLED,
		Detail:     proc.OneLine("cancelled: " + cause.Error() + " (never started)"),
		StartedAt:  now,
		FinishedAt: now,
	}
}

// gone is the outcome of a cancelled attempt whose worker went away before
// confirming.
func gone(at *attempt, c *conn, cause error) dispatch.Outcome {
	return dispatch.Outcome{
		State:      pb.RunState_RUN_STATE_CANCELLED,
		Detail:     proc.OneLine(fmt.Sprintf("cancelled: %v; worker %s gone: %v", context.Cause(at.ctx), c.id, cause)),
		StartedAt:  at.offeredAt,
		FinishedAt: time.Now(),
	}
}
