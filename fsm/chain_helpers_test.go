package fsm_test

import (
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	kindChained   = pb.FireKind_FIRE_KIND_CHAINED
	onSuccess     = pb.DependencyOn_DEPENDENCY_ON_SUCCESS
	onFailure     = pb.DependencyOn_DEPENDENCY_ON_FAILURE
	onAny         = pb.DependencyOn_DEPENDENCY_ON_ANY
	modeAll       = pb.AfterMode_AFTER_MODE_ALL
	modeAny       = pb.AfterMode_AFTER_MODE_ANY
	codeDepending = pb.ResultCode_RESULT_CODE_DEPENDENCY
)

// dep is a dependency on job, on outcome.
func dep(job string, on pb.DependencyOn) *pb.Dependency { return &pb.Dependency{Job: job, On: on} }

// childSpec is a job without a schedule that runs after deps, as the API
// stores it (mode and missing filled in).
func childSpec(name string, mode pb.AfterMode, deps ...*pb.Dependency) *pb.JobSpec {
	s := testSpec(name)
	s.Schedule = ""
	s.After = deps
	s.AfterMode = mode
	s.AfterMissing = pb.AfterMissing_AFTER_MISSING_REFUSE
	return s
}

func within(spec *pb.JobSpec, d time.Duration) *pb.JobSpec {
	spec.AfterWithin = durationpb.New(d)
	return spec
}

// completeAs applies one CompleteBatch of the harness leader and returns
// the whole result, chained runs included.
func (h *harness) completeAs(cs ...*pb.Completion) *pb.CommandResult {
	h.t.Helper()
	return h.mustOK(&pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
		Completions: cs, LeaderId: leaderID, Term: leaderTerm,
	}}})
}

// ran fires a manual run of job and finishes it with outcome, in an entry
// of its own, and returns the finished run and the entry's result.
func (h *harness) ran(job string, outcome pb.RunState) (*pb.Run, *pb.CommandResult) {
	h.t.Helper()
	r := h.accepted(ofGeneration(manualFire(job, "", true), h.job(job).GetGeneration())).GetRun()
	res := h.completeAs(done(r, outcome, h.now))
	return res.GetCompletions()[0].GetRun(), res
}

// runsOf lists the job's runs, oldest first.
func (h *harness) runsOf(job string) []*pb.Run {
	runs := h.f.ListRuns(job, 0)
	slices.Reverse(runs)
	return runs
}

// chainedRuns lists the job's runs of kind CHAINED, oldest first.
func (h *harness) chainedRuns(job string) []*pb.Run {
	var out []*pb.Run
	for _, r := range h.runsOf(job) {
		if r.GetKind() == kindChained {
			out = append(out, r)
		}
	}
	return out
}

// parentIDs lists the run ids of r's parents.
func parentIDs(r *pb.Run) []string {
	out := make([]string, len(r.GetParents()))
	for i, p := range r.GetParents() {
		out[i] = p.GetRunId()
	}
	return out
}

func tokenOfRun(r *pb.Run) uint64 { return fsm.CurrentAttempt(r).GetToken() }
