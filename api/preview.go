package api

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
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
// fires the same slots; none for a job that fires on its dependencies
// only), each marked with the calendar or freeze that stops it as things
// stand, or of an inline schedule and timezone, which are validated as a
// job's would be.
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
	var stops fsm.Stops
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
		if job.GetSpec().GetSchedule() == "" {
			return &pb.PreviewScheduleResponse{}, nil // it runs after others only
		}
		if w, err = jobWindow(job); err != nil {
			return nil, status.Errorf(codes.Internal, "job %q: stored spec cannot be evaluated: %v", req.GetName(), err)
		}
		stops = j.stops(req.GetName())
	case req.GetSchedule() != "":
		sched, err := j.inlineSchedule(req.GetSchedule(), req.GetTimezone())
		if err != nil {
			return nil, err
		}
		w = window{sched: sched}
	default:
		return nil, fieldError("name", "required: a registered job's name, or an inline schedule")
	}
	resp := &pb.PreviewScheduleResponse{}
	for t := w.next(after); !t.IsZero() && len(resp.Times) < count; t = w.next(t) {
		ts := timestamppb.New(t)
		resp.Times = append(resp.Times, ts)
		resp.Slots = append(resp.Slots, &pb.PreviewSlot{Time: ts, Skipped: stops.Reason(t.Unix())})
	}
	return resp, nil
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
		if sched, err = jobspec.ScheduleOf(spec); err != nil {
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
	j.fillNextFire(job, nil, j.now())
	return job
}

// fillNextFire sets status.next_fire_unix with fillNextFireWith and what
// stops the job's slots; sched is its schedule already parsed, or nil.
func (j *jobService) fillNextFire(job *pb.Job, sched schedule.Schedule, now time.Time) {
	fillNextFireWith(job, sched, j.stops(job.GetSpec().GetName()), now)
}

// stops is what decides the job's slots, or none if this node cannot say.
func (j *jobService) stops(name string) fsm.Stops {
	if j.cals == nil {
		return fsm.Stops{}
	}
	st, err := j.cals.Stops(name)
	if err != nil {
		return fsm.Stops{}
	}
	return st
}

// maxStopScan bounds the slots a next fire time looks past because its
// calendars or a freeze stop them.
const maxStopScan = 1000

// fillNextFireWith sets status.next_fire_unix: the first slot after now
// that would fire, past those that stops stop (looking at most
// maxStopScan slots ahead, else the first slot), 0 when none will (paused,
// past end_at, never); sched is the job's schedule already parsed, or nil.
// A job read without status is left as it is.
func fillNextFireWith(job *pb.Job, sched schedule.Schedule, stops fsm.Stops, now time.Time) {
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
	first := w.next(now)
	t := first
	for n := 0; !t.IsZero() && stops.Any() && stops.Reason(t.Unix()) != ""; n++ {
		if n == maxStopScan {
			t = first
			break
		}
		t = w.next(t)
	}
	if !t.IsZero() {
		st.NextFireUnix = t.Unix()
	}
}
