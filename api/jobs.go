// Package api implements raftcron's gRPC services. It validates requests,
// turns writes into Raft commands and serves reads from the replicated
// registry; it holds no state of its own.
package api

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Store commits commands through Raft (forwarding to the leader) and offers
// the barrier that makes a following registry read linearizable. The
// leader stamps each command with its own clock (cluster.Node does): the
// time a command carries from here is never trusted.
type Store interface {
	Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error)
	Barrier
}

// Barrier makes the registry reads that follow it linearizable.
type Barrier interface {
	ReadBarrier(ctx context.Context) error
}

// Registry is this node's applied state.
type Registry interface {
	Job(name string) (*pb.Job, error)
	ListJobs(q fsm.ListQuery) ([]*pb.Job, string)
	FencingToken() uint64
}

type jobService struct {
	pb.UnimplementedJobServiceServer
	store      Store
	reg        Registry
	now        func() time.Time
	trigger    Triggerer
	leadership Leadership
	exec       ExecPolicy
	limits     Limits
	audit      *AuditSwitch
	// clusterVersion: see Deps.ClusterVersion.
	clusterVersion func() uint32
	// secrets resolves the references of specs at registration.
	secrets SecretStore
	// cals marks previewed slots and next fire times with what stops them;
	// nil leaves them unmarked.
	cals Calendars
	// alerts holds the channels notify entries name.
	alerts ChannelLookup
	chains ChainGraph
}

// NewJobService serves JobService from d's Store and Registry (required),
// Triggerer, Leadership, Exec, Limits, Audit, ClusterVersion, Secrets
// (without it, no spec may reference a secret), Calendars, Chains (without
// it, the rules between jobs are checked at apply only) and Now.
func NewJobService(d Deps) pb.JobServiceServer {
	d = d.withDefaults()
	return &jobService{
		store: d.Store, reg: d.Registry, now: d.Now,
		trigger: d.Triggerer, leadership: d.Leadership,
		exec: d.Exec, limits: d.Limits, audit: d.Audit, clusterVersion: d.ClusterVersion,
		secrets: d.Secrets, alerts: d.Alerts,
		cals: d.Calendars, chains: d.Chains,
	}
}

func (j *jobService) CreateJob(ctx context.Context, req *pb.CreateJobRequest) (*pb.CreateJobResponse, error) {
	job, _, err := j.put(ctx, req.GetSpec(), pb.PutMode_PUT_MODE_CREATE, 0)
	if err != nil {
		return nil, err
	}
	return &pb.CreateJobResponse{Job: job}, nil
}

func (j *jobService) UpdateJob(ctx context.Context, req *pb.UpdateJobRequest) (*pb.UpdateJobResponse, error) {
	job, _, err := j.put(ctx, req.GetSpec(), pb.PutMode_PUT_MODE_UPDATE, req.GetExpectedVersion())
	if err != nil {
		return nil, err
	}
	return &pb.UpdateJobResponse{Job: job}, nil
}

func (j *jobService) ApplyJob(ctx context.Context, req *pb.ApplyJobRequest) (*pb.ApplyJobResponse, error) {
	job, res, err := j.put(ctx, req.GetSpec(), pb.PutMode_PUT_MODE_UPSERT, 0)
	if err != nil {
		return nil, err
	}
	return &pb.ApplyJobResponse{Job: job, Changed: res.GetChanged(), Created: res.GetCreated()}, nil
}

// put validates spec, proposes it and returns the job as stored, with its
// next fire time. The spec is normalized so that the FSM stores exactly
// what a later `job get` shows and re-applying that output is a no-op; the
// request is this call's own (gRPC decoded it for this handler alone), so
// that happens in place.
func (j *jobService) put(ctx context.Context, spec *pb.JobSpec, mode pb.PutMode, expectedVersion uint64) (*pb.Job, *pb.CommandResult, error) {
	if spec == nil {
		return nil, nil, fieldError("spec", "required")
	}
	now := j.now()
	w, err := prepare(spec, now, j.limits.Spec)
	if err != nil {
		return nil, nil, invalidArgument(err, "spec")
	}
	if err := checkInScope(ctx, "spec.labels", spec); err != nil {
		return nil, nil, err
	}
	if field, err := j.allowExec(spec); err != nil {
		return nil, nil, execDenied(field, field+": "+err.Error())
	}
	if err := j.allowTarget(ctx, spec); err != nil {
		return nil, nil, err
	}
	if err := j.secretRefs().check(ctx, "", spec); err != nil {
		return nil, nil, err
	}
	if err := j.allowCalendars(ctx, spec); err != nil {
		return nil, nil, err
	}
	if err := j.chainsAllowed("spec", spec); err != nil {
		return nil, nil, err
	}
	if err := j.checkDependencies(ctx, spec); err != nil {
		return nil, nil, err
	}
	res, err := j.apply(ctx, w.command(mode, expectedVersion, j.limits))
	if err != nil {
		return nil, nil, err
	}
	job := res.GetJob()
	j.fillNextFire(job, w.parsed(job), now)
	return job, res, nil
}

func (j *jobService) GetJob(ctx context.Context, req *pb.GetJobRequest) (*pb.GetJobResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, err
	}
	if err := j.barrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	job, err := visibleJob(ctx, j.reg, req.GetName())
	if err != nil {
		return nil, err
	}
	return &pb.GetJobResponse{Job: redactFor(ctx, j.withNextFire(job))}, nil
}

func (j *jobService) ListJobs(ctx context.Context, req *pb.ListJobsRequest) (*pb.ListJobsResponse, error) {
	after, err := decodePageToken(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	labels, matchable := scopedLabels(ctx, req.GetLabelSelector())
	if !matchable {
		return &pb.ListJobsResponse{}, nil
	}
	if err := j.barrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	jobs, next := j.reg.ListJobs(fsm.ListQuery{
		After:   after,
		Limit:   pageSize(req.GetPageSize()),
		Labels:  labels,
		MaxScan: maxListScan,
	})
	now := j.now()
	for _, job := range jobs {
		j.fillNextFire(job, nil, now)
		redactFor(ctx, job)
	}
	return &pb.ListJobsResponse{Jobs: jobs, NextPageToken: encodePageToken(next)}, nil
}

func (j *jobService) DeleteJob(ctx context.Context, req *pb.DeleteJobRequest) (*pb.DeleteJobResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, err
	}
	_, err := j.apply(ctx, &pb.Command{Kind: &pb.Command_DeleteJob{DeleteJob: &pb.DeleteJobCommand{
		Name: req.GetName(), ExpectedVersion: req.GetExpectedVersion(), Force: req.GetForce(),
	}}})
	if err != nil {
		return nil, err
	}
	return &pb.DeleteJobResponse{}, nil
}

func (j *jobService) PauseJob(ctx context.Context, req *pb.PauseJobRequest) (*pb.PauseJobResponse, error) {
	until, err := j.pauseEnd(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := j.setPaused(ctx, req.GetName(), true, req.GetNote(), until)
	if err != nil {
		return nil, err
	}
	return &pb.PauseJobResponse{Job: j.withNextFire(res.GetJob())}, nil
}

func (j *jobService) ResumeJob(ctx context.Context, req *pb.ResumeJobRequest) (*pb.ResumeJobResponse, error) {
	res, err := j.setPaused(ctx, req.GetName(), false, "", 0)
	if err != nil {
		return nil, err
	}
	return &pb.ResumeJobResponse{Job: j.withNextFire(res.GetJob())}, nil
}

// pauseEnd is the end a pause request asks for, in whole Unix seconds
// (rounded up), 0 for none: after now, and only once the cluster runs
// fsm.SchedulesVersion.
func (j *jobService) pauseEnd(ctx context.Context, req *pb.PauseJobRequest) (int64, error) {
	u := req.GetUntil()
	if u == nil {
		return 0, nil
	}
	if err := u.CheckValid(); err != nil {
		return 0, fieldError("until", "must be a valid timestamp: "+err.Error())
	}
	if !u.AsTime().After(j.now()) {
		return 0, fieldError("until", "must be after now")
	}
	if err := j.needVersion(ctx, req.GetName(), "a pause with an end", fsm.SchedulesVersion); err != nil {
		return 0, err
	}
	return ceilSeconds(u.AsTime()), nil
}

func (j *jobService) setPaused(ctx context.Context, name string, paused bool, note string, until int64) (*pb.CommandResult, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := validPauseNote(note); err != nil {
		return nil, err
	}
	return j.apply(ctx, &pb.Command{Kind: &pb.Command_SetPaused{SetPaused: &pb.SetPausedCommand{
		Name: name, Paused: paused, Note: note, UntilUnix: until,
	}}})
}

// apply commits cmd as the caller's, the audit trail switched on first if
// it can be; a result other than OK is an error.
func (j *jobService) apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return commit(ctx, j.store, j.audit, cmd)
}

// secretRefs checks the secret references of one call's specs.
func (j *jobService) secretRefs() *secretRefs {
	return &secretRefs{store: j.secrets, barrier: j.store, channels: j.alerts, version: j.clusterVersion}
}

// barrier makes the next registry read linearizable unless the caller
// asked for this node's possibly stale state.
func (j *jobService) barrier(ctx context.Context, stale bool) error {
	return readBarrier(ctx, j.store, stale)
}

func validName(name string) error {
	if err := jobspec.ValidateName(name); err != nil {
		return invalidArgument(err, "name")
	}
	return nil
}

// validJobName applies the job name rule to another request field that
// holds a job name, reporting it under that field.
func validJobName(field, name string) error {
	err := jobspec.ValidateName(name)
	if err == nil {
		return nil
	}
	var ve *jobspec.ValidationError
	if errors.As(err, &ve) && len(ve.Violations) > 0 {
		return fieldError(field, ve.Violations[0].Rule)
	}
	return fieldError(field, err.Error())
}

// validPauseNote applies the pause_note rule to the note of PauseJob,
// which becomes the spec's pause_note.
func validPauseNote(note string) error {
	if !utf8.ValidString(note) {
		return fieldError("note", "must be valid UTF-8")
	}
	if utf8.RuneCountInString(note) > jobspec.MaxPauseNote {
		return fieldError("note", fmt.Sprintf("must be at most %d characters", jobspec.MaxPauseNote))
	}
	return nil
}
