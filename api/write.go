package api

import (
	"slices"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// write is a spec ready to be proposed: normalized, validated, and with the
// schedule that validation parsed, which the answer reuses.
type write struct {
	spec  *pb.JobSpec
	sched schedule.Schedule
}

// prepare normalizes spec (not nil) in place, validates it and checks it
// against the node's limits; the error is a *jobspec.ValidationError.
func prepare(spec *pb.JobSpec, now time.Time, limits jobspec.Limits) (write, error) {
	jobspec.Normalize(spec)
	sched, err := jobspec.ValidateParsed(spec, now)
	if err != nil {
		return write{}, err
	}
	if err := limits.Check(spec); err != nil {
		return write{}, err
	}
	return write{spec: spec, sched: sched}, nil
}

// command is the put of the spec; it carries the registry's limits: the
// chain limits only for a spec with dependencies, the one put they bound,
// so that every other put stays a command of version 1 (fsm.VersionOf).
func (w write) command(mode pb.PutMode, expectedVersion uint64, l Limits) *pb.Command {
	put := &pb.PutJobCommand{Spec: w.spec, Mode: mode, ExpectedVersion: expectedVersion, MaxJobs: l.maxJobs()}
	if len(w.spec.GetAfter()) > 0 {
		put.MaxChainDepth, put.MaxChainFanout = l.chainLimits()
	}
	return &pb.Command{Kind: &pb.Command_PutJob{PutJob: put}}
}

// stored fills the next fire time of job, the FSM's answer to this write,
// without looking at its calendars (ApplyJobs answers thousands of jobs;
// GetJob shows the calendars' verdict).
func (w write) stored(job *pb.Job, now time.Time) *pb.Job {
	fillNextFireWith(job, w.parsed(job), fsm.Stops{}, now)
	return job
}

// parsed is the schedule of job, the FSM's answer to this write: the one
// validated unless the FSM kept another (it never does for a put that
// succeeded; the check keeps that an assumption of speed, not of
// correctness), else nil.
func (w write) parsed(job *pb.Job) schedule.Schedule {
	if s := job.GetSpec(); s.GetSchedule() != w.spec.GetSchedule() || s.GetTimezone() != w.spec.GetTimezone() ||
		!slices.Equal(s.GetSchedules(), w.spec.GetSchedules()) {
		return nil
	}
	return w.sched
}
