package api

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

const (
	defaultPreviewCount = 5
	maxPreviewCount     = 100
)

// PreviewSchedule lists the next fire times of a registered job (after its
// cursor, from start_at, up to end_at; a pause is ignored, since resuming
// fires the same slots) or of an inline schedule and timezone, which are
// validated as a job's would be.
func (j *jobService) PreviewSchedule(ctx context.Context, req *pb.PreviewScheduleRequest) (*pb.PreviewScheduleResponse, error) {
	after := j.now()
	if req.GetAfter() != nil {
		if err := req.GetAfter().CheckValid(); err != nil {
			return nil, fieldError("after", "must be a valid timestamp: "+err.Error())
		}
		after = req.GetAfter().AsTime()
	}
	count := previewCount(req.GetCount())
	var w window
	switch {
	case req.GetName() != "" && req.GetSchedule() != "":
		return nil, fieldError("schedule", "give either name (a registered job) or schedule (an inline spec), not both")
	case req.GetName() != "":
		if req.GetTimezone() != "" {
			return nil, fieldError("timezone", "only with an inline schedule: a registered job has its own")
		}
		job, err := j.registeredJob(ctx, req.GetName())
		if err != nil {
			return nil, err
		}
		if w, err = jobWindow(job); err != nil {
			return nil, status.Errorf(codes.Internal, "job %q: stored spec cannot be evaluated: %v", req.GetName(), err)
		}
	case req.GetSchedule() != "":
		sched, err := j.inlineSchedule(req.GetSchedule(), req.GetTimezone())
		if err != nil {
			return nil, err
		}
		w = window{sched: sched}
	default:
		return nil, fieldError("name", "required: a registered job's name, or an inline schedule")
	}
	times := make([]*timestamppb.Timestamp, 0, count)
	for t := w.next(after); !t.IsZero() && len(times) < count; t = w.next(t) {
		times = append(times, timestamppb.New(t))
	}
	return &pb.PreviewScheduleResponse{Times: times}, nil
}

func previewCount(n uint32) int {
	switch {
	case n == 0:
		return defaultPreviewCount
	case n > maxPreviewCount:
		return maxPreviewCount
	default:
		return int(n)
	}
}

// registeredJob reads a job after the read barrier.
func (j *jobService) registeredJob(ctx context.Context, name string) (*pb.Job, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := j.barrier(ctx, false); err != nil {
		return nil, err
	}
	return visibleJob(ctx, j.reg, name)
}

// inlineSchedule applies exactly the schedule and timezone rules of a job
// spec, so a spec previewed here is one that registering would accept.
func (j *jobService) inlineSchedule(spec, zone string) (schedule.Schedule, error) {
	probe := &pb.JobSpec{Schedule: spec, Timezone: zone}
	jobspec.Normalize(probe)
	var ve *jobspec.ValidationError
	if err := jobspec.Validate(probe, j.now()); errors.As(err, &ve) {
		var kept []jobspec.Violation
		for _, v := range ve.Violations {
			if v.Field == "schedule" || v.Field == "timezone" {
				kept = append(kept, v)
			}
		}
		if len(kept) > 0 {
			return nil, invalidArgument(&jobspec.ValidationError{Violations: kept}, "schedule")
		}
	}
	sched, err := schedule.CachedInZone(probe.GetSchedule(), probe.GetTimezone())
	if err != nil {
		return nil, fieldError("schedule", err.Error())
	}
	return sched, nil
}

// window is a schedule seen through a job's bounds and cursor: the slots
// the scheduler would fire.
type window struct {
	sched schedule.Schedule
	// notBefore: no slot at or before it fires (the cursor; start_at-1s).
	notBefore time.Time
	// end: no slot after it fires (end_at); zero means unbounded.
	end time.Time
}

func jobWindow(job *pb.Job) (window, error) {
	return windowOf(job, nil)
}

// windowOf is jobWindow with the job's schedule already parsed; nil parses
// it.
func windowOf(job *pb.Job, sched schedule.Schedule) (window, error) {
	spec := job.GetSpec()
	if sched == nil {
		var err error
		if sched, err = schedule.CachedInZone(spec.GetSchedule(), spec.GetTimezone()); err != nil {
			return window{}, err
		}
	}
	w := window{sched: sched}
	if c := job.GetStatus().GetCursorUnix(); c > 0 {
		w.notBefore = time.Unix(c, 0)
	}
	if s := spec.GetStartAt(); s != nil {
		// A slot exactly at start_at fires: start just before it.
		if first := s.AsTime().Add(-time.Nanosecond); first.After(w.notBefore) {
			w.notBefore = first
		}
	}
	if e := spec.GetEndAt(); e != nil {
		w.end = e.AsTime()
	}
	return w, nil
}

// next is the first slot strictly after t that the window lets fire, or
// the zero time.
func (w window) next(t time.Time) time.Time {
	if t.Before(w.notBefore) {
		t = w.notBefore
	}
	n := w.sched.Next(t)
	if n.IsZero() || (!w.end.IsZero() && n.After(w.end)) {
		return time.Time{}
	}
	return n
}

// withNextFire fills the job's next fire time, as of now, on this node.
func (j *jobService) withNextFire(job *pb.Job) *pb.Job {
	fillNextFire(job, j.now())
	return job
}

// fillNextFire sets status.next_fire_unix: the first slot after now that
// would fire, 0 when none will (paused, past end_at, never). A job read
// without status is left as it is.
func fillNextFire(job *pb.Job, now time.Time) {
	fillNextFireWith(job, nil, now)
}

// fillNextFireWith is fillNextFire with the job's schedule already parsed;
// nil parses it.
func fillNextFireWith(job *pb.Job, sched schedule.Schedule, now time.Time) {
	st := job.GetStatus()
	if st == nil {
		return
	}
	st.NextFireUnix = 0
	if job.GetSpec().GetPaused() {
		return
	}
	w, err := windowOf(job, sched)
	if err != nil {
		return // a stored spec was validated; nothing sensible to show
	}
	if t := w.next(now); !t.IsZero() {
		st.NextFireUnix = t.Unix()
	}
}
