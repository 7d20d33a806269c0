package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// after is a spec without a schedule that runs after parents.
func after(name string, labels map[string]string, parents ...string) *pb.JobSpec {
	s := labelled(name, labels)
	s.Schedule = ""
	for _, p := range parents {
		s.After = append(s.After, &pb.Dependency{Job: p})
	}
	return s
}

// The rules between jobs answer before anything is proposed: a missing
// parent NotFound, a cycle (also one an update closes) and a delete of a
// parent FailedPrecondition, each naming the jobs; a token names only
// parents it can read.
func TestDependencyRulesOverTheAPI(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	billing := map[string]string{"team": "billing"}
	hr := with(ctx, h.token(t, mgmt, "hr-ci", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "hr"}))
	for _, s := range []*pb.JobSpec{labelled("export", billing), after("load", billing, "export"), after("report", billing, "load")} {
		if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: s}); err != nil {
			t.Fatalf("create %s: %v", s.GetName(), err)
		}
	}
	entries := len(h.store.entries)
	_, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: after("x", billing, "nosuch")})
	if st := wantCode(t, err, codes.NotFound); !strings.Contains(st.Message(), `after[0].job: job "nosuch" not found (set after_missing: wait`) {
		t.Errorf("missing parent: %q", st.Message())
	}
	cyclic := labelled("export", billing)
	cyclic.After = []*pb.Dependency{{Job: "report"}}
	_, err = h.jobs.UpdateJob(admin, &pb.UpdateJobRequest{Spec: cyclic})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "export → load → report → export") {
		t.Errorf("cycle: %q", st.Message())
	}
	_, err = h.jobs.CreateJob(hr, &pb.CreateJobRequest{Spec: after("payroll", map[string]string{"team": "hr"}, "export")})
	if st := wantCode(t, err, codes.NotFound); !strings.Contains(st.Message(), `job "export" not found`) {
		t.Errorf("a parent outside the scope: %q", st.Message())
	}
	if n := len(h.store.entries); n != entries {
		t.Fatalf("refused puts proposed %d entries", n-entries)
	}

	_, err = h.jobs.DeleteJob(admin, &pb.DeleteJobRequest{Name: "load"})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "is a parent (after) of report") {
		t.Errorf("delete of a parent: %q", st.Message())
	}
	if _, err := h.jobs.DeleteJob(admin, &pb.DeleteJobRequest{Name: "load", Force: true}); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
}

// GetJobGraph is a read: a read token gets it, a worker token does not,
// and a scoped token sees its jobs only, a parent outside as missing.
func TestJobGraphOverTheAPI(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	read := with(ctx, h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil))
	worker := with(ctx, h.token(t, mgmt, "w", pb.AclRole_ACL_ROLE_WORKER, nil))
	hrOnly := with(ctx, h.token(t, mgmt, "hr-viewer", pb.AclRole_ACL_ROLE_READ, map[string]string{"team": "hr"}))
	wait := after("payroll", map[string]string{"team": "hr"}, "export")
	for _, s := range []*pb.JobSpec{labelled("export", map[string]string{"team": "billing"}), wait} {
		if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: s}); err != nil {
			t.Fatalf("create %s: %v", s.GetName(), err)
		}
	}
	g, err := h.chains.GetJobGraph(read, &pb.GetJobGraphRequest{Name: "payroll"})
	if err != nil || len(g.GetJobs()) != 2 || g.GetJobs()[1].GetAfter()[0].GetOn() != "success" ||
		g.GetJobs()[1].GetAfterMode() != "all" || g.GetJobs()[0].GetChildren()[0] != "payroll" {
		t.Fatalf("graph of payroll: %v, %v", g, err)
	}
	_, err = h.chains.GetJobGraph(worker, &pb.GetJobGraphRequest{})
	wantCode(t, err, codes.PermissionDenied)
	g, err = h.chains.GetJobGraph(hrOnly, &pb.GetJobGraphRequest{})
	if err != nil || len(g.GetJobs()) != 2 || !g.GetJobs()[0].GetMissing() || g.GetJobs()[0].GetName() != "export" {
		t.Fatalf("graph in the hr scope: %v, %v; want export missing", g, err)
	}
	_, err = h.chains.GetJobGraph(hrOnly, &pb.GetJobGraphRequest{Name: "export"})
	wantCode(t, err, codes.NotFound)
}

// GetRun shows a run's downstream runs: the runs its outcome fired.
func TestGetRunShowsDownstreamRuns(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := context.Background()
	for _, s := range []*pb.JobSpec{validSpec("export"), after("load", nil, "export")} {
		if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: s}); err != nil {
			t.Fatal(err)
		}
	}
	run, err := h.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "export"})
	if err != nil {
		t.Fatal(err)
	}
	r := run.GetRun()
	res, err := h.store.Apply(ctx, &pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
		LeaderId: "n1", Term: 1,
		Completions: []*pb.Completion{{RunId: r.GetId(), Token: fsm.CurrentAttempt(r).GetToken(), Outcome: pb.RunState_RUN_STATE_SUCCEEDED}},
	}}})
	if err != nil || len(res.GetChained()) != 1 {
		t.Fatalf("completion: %v, %v", res, err)
	}
	got, err := h.runs.GetRun(ctx, &pb.GetRunRequest{Id: r.GetId()})
	if err != nil || len(got.GetRun().GetChildren()) != 1 || got.GetRun().GetChildren()[0].GetRunId() != res.GetChained()[0].GetId() {
		t.Fatalf("GetRun of the parent: %v, %v", got, err)
	}
	child, err := h.runs.GetRun(ctx, &pb.GetRunRequest{Id: res.GetChained()[0].GetId()})
	if err != nil || len(child.GetRun().GetParents()) != 1 || child.GetRun().GetParents()[0].GetRunId() != r.GetId() {
		t.Fatalf("GetRun of the child: %v, %v", child, err)
	}
}

// Dependencies wait for the cluster version that fires them.
func TestDependenciesNeedTheChainsVersion(t *testing.T) {
	state := fsm.New()
	store := &fsmStore{f: state}
	if _, err := store.Apply(context.Background(), fsm.SetClusterVersion(2)); err != nil {
		t.Fatal(err)
	}
	svc := NewJobService(Deps{Store: store, Registry: state, Chains: state, ClusterVersion: state.ClusterVersion})
	if _, err := svc.CreateJob(context.Background(), &pb.CreateJobRequest{Spec: validSpec("export")}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.CreateJob(context.Background(), &pb.CreateJobRequest{Spec: after("load", nil, "export")})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "dependencies need cluster version 3, and the cluster runs 2") {
		t.Fatalf("message %q", st.Message())
	}
}

// ApplyJobs registers a whole chain in any order: each spec after those of
// the call it runs after. A cycle within the call is refused spec by spec.
func TestApplyJobsOrdersAChain(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := context.Background()
	resp, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{
		after("report", nil, "load"), after("load", nil, "export"), validSpec("export"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.GetResults() {
		if r.GetCode() != 0 || !r.GetCreated() {
			t.Fatalf("result %d: %v", i, r)
		}
	}
	resp, err = h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{
		after("x", nil, "y"), after("y", nil, "x"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	codes := []int32{resp.GetResults()[0].GetCode(), resp.GetResults()[1].GetCode()}
	if codes[0] == 0 && codes[1] == 0 {
		t.Fatalf("a cycle within one call: both applied (%v)", resp.GetResults())
	}
}

func TestDependencyWaves(t *testing.T) {
	w := func(s *pb.JobSpec) write { return write{spec: s} }
	waves := dependencyWaves([]write{
		w(after("c", nil, "b")), w(after("b", nil, "a", "outside")), w(validSpec("a")), w(validSpec("d")),
	})
	if got := fmt.Sprint(waves); got != "[[2 3] [1] [0]]" {
		t.Fatalf("waves %s", got)
	}
}
