package api

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// PreconditionNoBackfill is the PreconditionFailure type of a cancel of a
// backfill that does not run.
const PreconditionNoBackfill = "NO_BACKFILL"

// maxBackfillConcurrent bounds a backfill's runs open at once; the open
// runs of one job are bounded besides (serve --max-open-runs).
const maxBackfillConcurrent = 100

// BackfillJob starts a backfill of the job's slots in [from, to). This node
// counts them on the job's schedule (from start_at, up to end_at) and names
// the first; the leader's scheduler fires them.
func (j *jobService) BackfillJob(ctx context.Context, req *pb.BackfillJobRequest) (*pb.BackfillJobResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, err
	}
	cmd, err := j.backfillCommand(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := j.barrier(ctx, false); err != nil {
		return nil, err
	}
	job, err := visibleJob(ctx, j.reg, req.GetName())
	if err != nil {
		return nil, err
	}
	if job.GetSpec().GetCheckin() != nil {
		return nil, precondition(PreconditionRefused, req.GetName(), fmt.Sprintf(
			"job %q is a check-in job: it runs elsewhere and checks in; raftcron fires none of its slots, so it backfills none", req.GetName()))
	}
	if err := j.countSlots(job, cmd); err != nil {
		return nil, err
	}
	res, err := j.apply(ctx, &pb.Command{Kind: &pb.Command_StartBackfill{StartBackfill: cmd}})
	if err != nil {
		return nil, err
	}
	return &pb.BackfillJobResponse{Backfill: res.GetBackfill()}, nil
}

// CancelBackfill stops the job's running backfill. A job with none is
// FailedPrecondition (the FSM, deciding last, would say NotFound).
func (j *jobService) CancelBackfill(ctx context.Context, req *pb.CancelBackfillRequest) (*pb.CancelBackfillResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, err
	}
	if err := j.barrier(ctx, false); err != nil {
		return nil, err
	}
	job, err := visibleJob(ctx, j.reg, req.GetName())
	if err != nil {
		return nil, err
	}
	if job.GetStatus().GetBackfill().GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING {
		return nil, precondition(PreconditionNoBackfill, req.GetName(), fmt.Sprintf("job %q has no backfill running", req.GetName()))
	}
	res, err := j.apply(ctx, &pb.Command{Kind: &pb.Command_CancelBackfill{CancelBackfill: &pb.CancelBackfillCommand{
		Job: req.GetName(),
	}}})
	if err != nil {
		return nil, err
	}
	return &pb.CancelBackfillResponse{Backfill: res.GetBackfill()}, nil
}

// backfillCommand checks what a request asks for, each broken rule named
// by its field, and returns the start without its slots.
func (j *jobService) backfillCommand(ctx context.Context, req *pb.BackfillJobRequest) (*pb.StartBackfillCommand, error) {
	from, err := backfillBound("from", req.GetFrom())
	if err != nil {
		return nil, err
	}
	to, err := backfillBound("to", req.GetTo())
	if err != nil {
		return nil, err
	}
	switch now := j.now(); {
	case !from.Before(to):
		return nil, fieldError("from", fmt.Sprintf("%s is not before to (%s)", stamp(from), stamp(to)))
	case to.After(now):
		return nil, fieldError("to", fmt.Sprintf("%s is after now (%s): a backfill fires past slots, the schedule the rest", stamp(to), stamp(now)))
	}
	overlap, err := overlapWord("overlap", req.GetOverlap(), pb.Overlap_OVERLAP_SKIP, pb.Overlap_OVERLAP_BUFFER_ONE, pb.Overlap_OVERLAP_ALLOW)
	if err != nil {
		return nil, err
	}
	if overlap == pb.Overlap_OVERLAP_UNSPECIFIED {
		overlap = pb.Overlap_OVERLAP_BUFFER_ONE
	}
	concurrent := max(req.GetMaxConcurrent(), 1)
	switch {
	case concurrent > maxBackfillConcurrent:
		return nil, fieldError("max_concurrent", fmt.Sprintf("must be from 1 to %d", maxBackfillConcurrent))
	case concurrent > 1 && overlap != pb.Overlap_OVERLAP_ALLOW:
		return nil, fieldError("max_concurrent", "more than one backfill run at once needs overlap allow")
	}
	if err := j.needVersion(ctx, req.GetName(), "a backfill", fsm.SchedulesVersion); err != nil {
		return nil, err
	}
	return &pb.StartBackfillCommand{
		Job: req.GetName(), FromUnix: ceilSeconds(from), ToUnix: ceilSeconds(to),
		Overlap: overlapName(overlap), MaxConcurrent: concurrent, Rerun: req.GetRerun(),
		MaxSlots: j.limits.maxBackfillSlots(),
	}, nil
}

// countSlots fills in the generation cmd is for and the slots of job's
// schedule in cmd's range: the first and how many, at most MaxSlots.
func (j *jobService) countSlots(job *pb.Job, cmd *pb.StartBackfillCommand) error {
	if !jobspec.HasSchedule(job.GetSpec()) {
		return status.Errorf(codes.FailedPrecondition, "job %q has no schedule of its own to backfill: it runs after others", job.GetSpec().GetName())
	}
	sched, err := jobspec.ScheduleOf(job.GetSpec())
	if err != nil {
		return status.Errorf(codes.Internal, "job %q: stored spec cannot be evaluated: %v", job.GetSpec().GetName(), err)
	}
	first, n := backfillSlots(job.GetSpec(), sched, cmd.GetFromUnix(), cmd.GetToUnix(), cmd.GetMaxSlots())
	switch {
	case n == 0:
		return fieldError("from", "the job's schedule has no slot in the range (from start_at, up to end_at)")
	case n > cmd.GetMaxSlots():
		return fieldError("to", fmt.Sprintf("the range holds more than %d slots, the most one backfill may (serve --max-backfill-slots)",
			cmd.GetMaxSlots()))
	}
	cmd.Generation, cmd.FirstSlotUnix, cmd.Slots = job.GetGeneration(), first, n
	return nil
}

// backfillSlots is the first slot of sched in [from, to) within spec's
// start_at and end_at, and how many there are, counting no further than
// limit+1.
func backfillSlots(spec *pb.JobSpec, sched schedule.Schedule, from, to int64, limit uint64) (first int64, n uint64) {
	w := window{sched: sched, notBefore: time.Unix(from, 0).Add(-time.Nanosecond)}
	if s := spec.GetStartAt(); s != nil && s.AsTime().Add(-time.Nanosecond).After(w.notBefore) {
		w.notBefore = s.AsTime().Add(-time.Nanosecond)
	}
	if e := spec.GetEndAt(); e != nil {
		w.end = e.AsTime()
	}
	for t := w.next(w.notBefore); !t.IsZero() && t.Unix() < to && n <= limit; t = w.next(t) {
		if n == 0 {
			first = t.Unix()
		}
		n++
	}
	return first, n
}

// backfillBound reads from or to: required and valid.
func backfillBound(field string, ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, fieldError(field, "required")
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, fieldError(field, "must be a valid timestamp: "+err.Error())
	}
	return ts.AsTime(), nil
}

// ceilSeconds is t in whole Unix seconds, rounded up: slots are whole
// seconds, and the first one at or after t is in.
func ceilSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
