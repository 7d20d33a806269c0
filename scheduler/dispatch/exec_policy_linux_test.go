package dispatch

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestExecDeniedAtDispatch: the leader's own policy is checked before anything runs,
// whatever the node that registered the job allowed.
func TestExecDeniedAtDispatch(t *testing.T) {
	only, err := policy.NewExec([]string{"/usr/local/bin/*"})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	a := execAttempt("/bin/sh", "-c", "touch "+marker)
	for name, ex := range map[string]*ExecExecutor{
		"not in the list": NewExecExecutor(ExecConfig{Allow: only}),
		"no policy":       NewExecExecutor(ExecConfig{}),
	} {
		out := ex.Execute(context.Background(), a)
		wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
		if out.Reason != ReasonExecDenied || !strings.HasPrefix(out.Detail, "exec denied: ") {
			t.Fatalf("%s: reason %q detail %q, want %s", name, out.Reason, out.Detail, ReasonExecDenied)
		}
		if name == "not in the list" && !strings.Contains(out.Detail, "--exec-allow (/usr/local/bin/*)") {
			t.Fatalf("detail %q does not name the rule", out.Detail)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran (stat: %v)", err)
	}
	// A failure of the program itself carries no reason: it may be retried.
	if out := newTestExec().Execute(context.Background(), execAttempt("/bin/false")); out.Reason != "" {
		t.Fatalf("an ordinary failure has reason %q", out.Reason)
	}
}

// TestExecEnvInjectionDeniedAtDispatch: a job registered elsewhere (or before this
// node refused its env) whose env would make the shell run code of its choosing fails
// exec_denied, naming the variable, and nothing runs; --exec-env-allow opens it.
func TestExecEnvInjectionDeniedAtDispatch(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	a := execAttempt("/bin/sh", "-c", "date")
	a.Exec.Env = map[string]string{"PATH": "/bin:/usr/bin", "BASH_FUNC_date%%": "() { touch " + marker + "; }",
		"BASH_ENV": marker}
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
	if out.Reason != ReasonExecDenied || !strings.Contains(out.Detail, `"BASH_ENV"`) || !strings.Contains(out.Detail, "--exec-env-allow") {
		t.Fatalf("reason %q detail %q, want %s naming BASH_ENV and --exec-env-allow", out.Reason, out.Detail, ReasonExecDenied)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the refused job ran (stat: %v)", err)
	}
	open, err := policy.NewEnv([]string{"BASH_*"})
	if err != nil {
		t.Fatal(err)
	}
	a.Exec.Env = map[string]string{"PATH": "/bin:/usr/bin", "BASH_ENV": "/dev/null"}
	out = NewExecExecutor(ExecConfig{Allow: testPrograms.WithEnv(open)}).Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
}

func TestExecRunsAsExecUser(t *testing.T) {
	testutil.NeedRoot(t, "switching users (--exec-user)")
	u, err := proc.LookupUser("nobody")
	if err != nil {
		testutil.SkipOrFail(t, "no user nobody here: %v", err)
	}
	ex := NewExecExecutor(ExecConfig{Allow: testPrograms, User: u})
	out := ex.Execute(context.Background(), execAttempt("/bin/sh", "-c", "/usr/bin/id -u; /usr/bin/id -g; /usr/bin/id -G"))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	ids := strings.Fields(string(out.Output))
	want := []string{itoa(u.UID), itoa(u.GID)}
	if len(ids) < 3 || ids[0] != want[0] || ids[1] != want[1] {
		t.Fatalf("child ids %q, want uid %s gid %s", out.Output, want[0], want[1])
	}
	for _, g := range ids[2:] {
		if g == "0" {
			t.Fatalf("child kept the node's group root: groups %v", ids[2:])
		}
	}
}

// An exec run gets a v2 signature of the run-only form, which a v2-only fence accepts.
func TestExecSignsForFence(t *testing.T) {
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	ex := NewExecExecutor(ExecConfig{Allow: testPrograms, Signer: NewSigner(keys, nil)})
	out := ex.Execute(context.Background(), execAttempt("/usr/bin/env"))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(out.Output)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	run, err := fence.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.NewVerifier(keys).Verify(fence.ExecDispatch(run, nil), env[fence.EnvSignature]); err != nil {
		t.Fatalf("fence refused %s=%q: %v", fence.EnvSignature, env[fence.EnvSignature], err)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
