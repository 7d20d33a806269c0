package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxApplyJobs is the most specs one ApplyJobs call may carry. It bounds
// the work one call queues in Raft and the size of its answer.
const MaxApplyJobs = 1000

// maxBulkViolations bounds the field violations one refused call lists.
const maxBulkViolations = 100

// BulkStore commits many commands at once, each as its own Raft entry
// (cluster.Node does). ApplyJobs uses it when the Store offers it, and
// concurrent Apply calls otherwise. Its contract is cluster.ApplyBulk's:
// cluster.ErrNotLeader when nothing was proposed because this node does not
// lead, otherwise one result per command.
type BulkStore interface {
	ApplyBulk(ctx context.Context, cmds []*pb.Command) ([]cluster.BulkResult, error)
}

// ApplyJobs applies many specs: all are validated before any is proposed,
// then each is committed as its own entry, concurrently. On a follower the
// whole call goes to the leader, once.
func (j *jobService) ApplyJobs(ctx context.Context, req *pb.ApplyJobsRequest) (*pb.ApplyJobsResponse, error) {
	specs := req.GetSpecs()
	if len(specs) > MaxApplyJobs {
		return nil, fieldError("specs", fmt.Sprintf("at most %d specs per call, got %d: split them into several calls", MaxApplyJobs, len(specs)))
	}
	forwarded := isForwarded(ctx)
	if j.leadership != nil && !j.leadership.IsLeader() {
		return j.forwardApplyJobs(ctx, req, forwarded)
	}
	now := j.now()
	writes, err := prepareBulk(specs, now, j.limits.Spec)
	if err != nil {
		return nil, err
	}
	if err := j.allowExecBatch(writes); err != nil {
		return nil, err
	}
	if err := j.allowCalendars(ctx, specsOf(writes)...); err != nil {
		return nil, err
	}
	if err := j.allowTargets(ctx, writes); err != nil {
		return nil, err
	}
	j.audit.ensure(ctx)
	caller := PrincipalFrom(ctx).caller()
	refs := j.secretRefs()
	cmds := make([]*pb.Command, len(writes))
	for i, w := range writes {
		if err := checkInScope(ctx, fmt.Sprintf("specs[%d].labels", i), w.spec); err != nil {
			return nil, err
		}
		if err := refs.check(ctx, fmt.Sprintf("specs[%d]", i), w.spec); err != nil {
			return nil, err
		}
		if err := j.chainsAllowed(fmt.Sprintf("specs[%d]", i), w.spec); err != nil {
			return nil, err
		}
		cmds[i] = w.command(pb.PutMode_PUT_MODE_UPSERT, 0, j.limits)
		cmds[i].Caller = caller
	}
	results, err := j.applyInWaves(ctx, writes, cmds)
	if errors.Is(err, cluster.ErrNotLeader) {
		// Nothing was proposed: the leader can take the whole call.
		return j.forwardApplyJobs(ctx, req, forwarded)
	}
	if err != nil {
		return nil, statusOf(err)
	}
	out := make([]*pb.ApplyJobsResult, len(results))
	for i, r := range results {
		out[i] = bulkResult(writes[i], r, now)
	}
	return &pb.ApplyJobsResponse{Results: out}, nil
}

// prepareBulk normalizes and validates every spec. One invalid spec, or
// two with the same name, refuse the whole call: the error names each
// offending spec by its index ("specs[3].schedule").
func prepareBulk(specs []*pb.JobSpec, now time.Time, limits jobspec.Limits) ([]write, error) {
	writes := make([]write, len(specs))
	seen := make(map[string]int, len(specs))
	var (
		violations []*errdetails.BadRequest_FieldViolation
		first      string
		bad        int
	)
	refuse := func(i int, msg string, vs ...*errdetails.BadRequest_FieldViolation) {
		if bad == 0 {
			first = fmt.Sprintf("specs[%d]: %s", i, msg)
		}
		bad++
		violations = append(violations, vs...)
	}
	at := func(i int) string { return fmt.Sprintf("specs[%d]", i) }
	for i, spec := range specs {
		if spec == nil {
			refuse(i, "required", &errdetails.BadRequest_FieldViolation{Field: at(i), Description: "required"})
			continue
		}
		w, err := prepare(spec, now, limits)
		if err != nil {
			refuse(i, err.Error(), specViolations(at(i), err)...)
			continue
		}
		if prev, dup := seen[spec.GetName()]; dup {
			rule := fmt.Sprintf("job %q is also specs[%d]: a name may appear once per call", spec.GetName(), prev)
			refuse(i, "name: "+rule, &errdetails.BadRequest_FieldViolation{Field: at(i) + ".name", Description: rule})
			continue
		}
		seen[spec.GetName()] = i
		writes[i] = w
	}
	if bad == 0 {
		return writes, nil
	}
	if bad > 1 {
		first += fmt.Sprintf(" (and %d more invalid specs)", bad-1)
	}
	if len(violations) > maxBulkViolations {
		violations = violations[:maxBulkViolations]
	}
	return nil, badRequest("nothing applied: "+first, violations...)
}

// specViolations lists a spec's broken rules under its index.
func specViolations(at string, err error) []*errdetails.BadRequest_FieldViolation {
	var ve *jobspec.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return []*errdetails.BadRequest_FieldViolation{{Field: at, Description: err.Error()}}
	}
	out := make([]*errdetails.BadRequest_FieldViolation, len(ve.Violations))
	for i, v := range ve.Violations {
		out[i] = &errdetails.BadRequest_FieldViolation{Field: at + "." + v.Field, Description: v.Rule}
	}
	return out
}

// applyBulk commits cmds through the Store's ApplyBulk, or through
// concurrent Apply calls when it has none.
func (j *jobService) applyBulk(ctx context.Context, cmds []*pb.Command) ([]cluster.BulkResult, error) {
	if bs, ok := j.store.(BulkStore); ok {
		return bs.ApplyBulk(ctx, cmds)
	}
	out := make([]cluster.BulkResult, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() {
			res, err := j.store.Apply(ctx, cmd)
			out[i] = cluster.BulkResult{Result: res, Err: err}
		})
	}
	wg.Wait()
	return out, nil
}

// bulkResult is one spec's answer: the job as ApplyJob returns it, or the
// error ApplyJob would have returned, naming the job.
func bulkResult(w write, r cluster.BulkResult, now time.Time) *pb.ApplyJobsResult {
	err := statusOf(r.Err)
	if err == nil && r.Result.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		err = resultStatus(r.Result)
	}
	if err != nil {
		st := status.Convert(err)
		return &pb.ApplyJobsResult{Code: int32(st.Code()), Message: fmt.Sprintf("job %q: %s", w.spec.GetName(), st.Message())}
	}
	res := r.Result
	return &pb.ApplyJobsResult{Job: w.stored(res.GetJob(), now), Changed: res.GetChanged(), Created: res.GetCreated()}
}

// forwardApplyJobs hands the call to the leader, unless it was forwarded
// here already.
func (j *jobService) forwardApplyJobs(ctx context.Context, req *pb.ApplyJobsRequest, forwarded bool) (*pb.ApplyJobsResponse, error) {
	c, ctx, err := j.leaderClient(ctx, forwarded)
	if err != nil {
		return nil, err
	}
	resp, err := c.ApplyJobs(ctx, req)
	if err != nil {
		return nil, statusOf(err)
	}
	return resp, nil
}
