package dispatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestExecEnvIsExactlyRunVarsAndJobEnv: nothing of the node's environment, not even
// PATH or HOME, reaches the child; the job cannot forge the run's variables.
func TestExecEnvIsExactlyRunVarsAndJobEnv(t *testing.T) {
	t.Setenv("RAFTCRON_TEST_NODE_SECRET", "s3cret")
	a := execAttempt("/usr/bin/env")
	a.Exec.Env = map[string]string{"MY_VAR": "mine", fence.EnvFencingToken: "1"}
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	got := strings.Split(strings.TrimSpace(string(out.Output)), "\n")
	slices.Sort(got)
	want := []string{
		"MY_VAR=mine",
		"RAFTCRON_ATTEMPT=1",
		"RAFTCRON_FENCING_TOKEN=77",
		"RAFTCRON_IDEMPOTENCY_KEY=prune/2026-11-22T01:02:03Z",
		"RAFTCRON_JOB=prune",
		"RAFTCRON_RUN_ID=run-9",
		"RAFTCRON_SCHEDULED_AT=2026-11-22T01:02:03Z",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("child environment\n%s\nwant exactly\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A chained run's child gets its parent runs, the job's env cannot forge them.
func TestExecEnvCarriesParentRuns(t *testing.T) {
	a := execAttempt("/usr/bin/env")
	a.Exec.Env = map[string]string{fence.EnvParentRuns: "forged@1"}
	a.ParentRuns = "export-41@41,export-43@43"
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	if !strings.HasSuffix(strings.TrimSpace(string(out.Output)), fence.EnvParentRuns+"=export-41@41,export-43@43") {
		t.Fatalf("child environment ends\n%s\nwant the parent runs last", out.Output)
	}
}

// TestExecPayloadIsInTheEnvironment: a manual run's payload is
// RAFTCRON_PAYLOAD, which the job's env cannot forge.
func TestExecPayloadIsInTheEnvironment(t *testing.T) {
	a := execAttempt("/bin/sh", "-c", "printf %s \"$RAFTCRON_PAYLOAD\"")
	a.Exec.Env = map[string]string{EnvPayload: "forged"}
	a.Payload = `{"invoice": 42}`
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	if string(out.Output) != a.Payload {
		t.Fatalf("the command saw %q, want the payload %q", out.Output, a.Payload)
	}
}

func TestExecStartsInRootUnlessDirIsSet(t *testing.T) {
	t.Chdir(t.TempDir()) // the node's own working directory must not leak into the child
	out := newTestExec().Execute(context.Background(), execAttempt("/bin/pwd"))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	if got := strings.TrimSpace(string(out.Output)); got != "/" {
		t.Fatalf("pwd = %q, want /", got)
	}
}

func TestExecArgvPassedLiterallyWithoutShell(t *testing.T) {
	out := newTestExec().Execute(context.Background(),
		execAttempt("/usr/bin/printf", "%s|", "two words", "$HOME", "*", "; echo injected"))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	if want := "two words|$HOME|*|; echo injected|"; string(out.Output) != want {
		t.Fatalf("output %q, want %q", out.Output, want)
	}
}

func TestExecDirIsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	a := execAttempt("/bin/pwd")
	a.Exec.Dir = dir
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "")
	if got := strings.TrimSpace(string(out.Output)); got != dir {
		t.Fatalf("pwd = %q, want %q", got, dir)
	}
}

func TestExecNonZeroExitFails(t *testing.T) {
	out := newTestExec().Execute(context.Background(), execAttempt("/bin/sh", "-c", "echo oops >&2; exit 3"))
	wantState(t, out, pb.RunState_RUN_STATE_FAILED, "exit status 3")
	if string(out.Output) != "oops\n" {
		t.Fatalf("stderr not kept: %q", out.Output)
	}
}

func TestExecCannotStartFailsWithReason(t *testing.T) {
	missingDir := execAttempt("/bin/true")
	missingDir.Exec.Dir = filepath.Join(t.TempDir(), "nope")
	nulEnv := execAttempt("/bin/true")
	nulEnv.Exec.Env = map[string]string{"A": "x\x00y"}
	fileDir := execAttempt("/bin/true")
	fileDir.Exec.Dir = "/bin/true"
	for name, c := range map[string]struct {
		a    Attempt
		want string
	}{
		"missing binary": {execAttempt("/nonexistent/tool", "x"), "no such file or directory"},
		"not executable": {execAttempt("/etc/passwd"), "permission denied"},
		"missing dir":    {missingDir, "dir: stat " + missingDir.Exec.Dir + ": no such file or directory"},
		"dir is a file":  {fileDir, "not a directory"},
		"empty argv":     {execAttempt(), "exec: empty command"},
		"NUL in argv":    {execAttempt("/bin/echo", "a\x00b"), "invalid argument"},
		"NUL in env":     {nulEnv, "NUL"},
		"no target":      {Attempt{Job: "x"}, "no exec target"},
	} {
		t.Run(name, func(t *testing.T) {
			out := newTestExec().Execute(context.Background(), c.a)
			wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
			if !strings.Contains(out.Detail, c.want) {
				t.Fatalf("detail %q lacks %q", out.Detail, c.want)
			}
		})
	}
}

// groupScript starts a grandchild in the background, records both pids and
// waits, so that only a kill of the whole group ends it early.
const groupScript = `sleep 60 & echo $! > "$D/grandchild.tmp" && mv "$D/grandchild.tmp" "$D/grandchild"
echo $$ > "$D/child.tmp" && mv "$D/child.tmp" "$D/child"
wait`

func groupAttempt(t *testing.T) (Attempt, string) {
	dir := t.TempDir()
	a := execAttempt("/bin/sh", "-c", groupScript)
	a.Exec.Env = map[string]string{"D": dir}
	return a, dir
}

// wantGroupGone asserts that both processes of groupScript are gone.
func wantGroupGone(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"child", "grandchild"} {
		pid := testutil.ReadPidFile(t, filepath.Join(dir, name))
		t.Cleanup(func() { testutil.KillIfSleeping(pid) })
		testutil.WaitFor(t, 5*time.Second, name+" process gone", func() bool { return testutil.ProcessGone(pid) })
	}
}

func TestExecDeadlineKillsProcessGroup(t *testing.T) {
	a, dir := groupAttempt(t)
	a.Deadline = time.Second
	start := time.Now()
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, "deadline 1s exceeded")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Execute returned %s after a 1s deadline", d)
	}
	wantGroupGone(t, dir)
}

func TestExecTargetTimeoutKillsProcessGroupAndFails(t *testing.T) {
	a, dir := groupAttempt(t)
	a.Exec.Timeout = durationpb.New(time.Second)
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_FAILED, "timeout after 1s")
	wantGroupGone(t, dir)
}

func TestExecCancelKillsProcessGroup(t *testing.T) {
	a, dir := groupAttempt(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		// Cancel once the script is past starting its grandchild.
		for range 1000 {
			if _, err := os.Stat(filepath.Join(dir, "child")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel(errors.New("leadership lost"))
	}()
	out := newTestExec().Execute(ctx, a)
	wantState(t, out, pb.RunState_RUN_STATE_CANCELLED, "cancelled: leadership lost")
	wantGroupGone(t, dir)
}

func TestExecLeftoverProcessesKilledAfterExit(t *testing.T) {
	dir := t.TempDir()
	a := execAttempt("/bin/sh", "-c", `sleep 60 & echo $! > "$D/bg.tmp" && mv "$D/bg.tmp" "$D/bg"; echo done`)
	a.Exec.Env = map[string]string{"D": dir}
	start := time.Now()
	out := newTestExec().Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	elapsed := time.Since(start)
	pid := testutil.ReadPidFile(t, filepath.Join(dir, "bg"))
	t.Cleanup(func() { testutil.KillIfSleeping(pid) })
	// Without the group kill the background sleep would hold the output
	// pipe open until waitDelay.
	if elapsed >= proc.WaitDelay {
		t.Fatalf("Execute took %s: waited on the leftover's pipe", elapsed)
	}
	testutil.WaitFor(t, 5*time.Second, "background process gone", func() bool { return testutil.ProcessGone(pid) })
}

// daemonScript leaves a grandchild behind as a daemon does (setsid, its parent
// gone at once), records its pid, and waits: the group's kill does not reach it.
const daemonScript = `( setsid /bin/sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 60' "$D/daemon" </dev/null >/dev/null 2>&1 & )
sleep 60`

// A run that is cancelled or times out takes along what it left outside its
// process group: its cgroup is killed, or its orphans, re-parented to the node.
func TestExecSetsidGrandchildEndsWithTheRun(t *testing.T) {
	testutil.NeedTool(t, "setsid", "install util-linux")
	if proc.Containment() == proc.ContainNone {
		testutil.SkipOrFail(t, "neither a cgroup nor the subreaper contains runs here")
	}
	for name, end := range map[string]func(Attempt) (context.Context, func(), pb.RunState){
		"cancelled": func(Attempt) (context.Context, func(), pb.RunState) {
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, cancel, pb.RunState_RUN_STATE_CANCELLED
		},
		"timed out": func(a Attempt) (context.Context, func(), pb.RunState) {
			a.Exec.Timeout = durationpb.New(time.Second)
			return context.Background(), func() {}, pb.RunState_RUN_STATE_FAILED
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a := execAttempt("/bin/sh", "-c", daemonScript)
			a.Exec.Env = map[string]string{"D": dir, "PATH": "/bin:/usr/bin"}
			ctx, stop, want := end(a)
			done := make(chan Outcome, 1)
			go func() { done <- newTestExec().Execute(ctx, a) }()
			pid := testutil.ReadPidFile(t, filepath.Join(dir, "daemon"))
			t.Cleanup(func() { testutil.KillIfSleeping(pid) })
			stop()
			out := receive(t, done, 10*time.Second, "the run's end")
			wantState(t, out, want, "")
			testutil.WaitFor(t, 5*time.Second, "the run's daemon gone", func() bool { return testutil.ProcessGone(pid) })
		})
	}
}

func TestExecOutputTruncatedWithoutBlockingChild(t *testing.T) {
	// 1 MiB on stdout, then a marker on stderr: the child must be able to
	// write it all (and exit 0) though only the first 4 KiB are kept.
	out := newTestExec().Execute(context.Background(),
		execAttempt("/bin/sh", "-c", `head -c 1048576 /dev/zero | tr '\0' a; echo end >&2`))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	if len(out.Output) != MaxOutput || strings.Trim(string(out.Output), "a") != "" {
		t.Fatalf("output %d bytes, want the first %d", len(out.Output), MaxOutput)
	}
}

func TestExecAlreadyCancelledStartsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := newTestExec().Execute(ctx, execAttempt("/bin/sh", "-c", "touch "+marker))
	wantState(t, out, pb.RunState_RUN_STATE_CANCELLED, "cancelled: context canceled")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a cancelled attempt ran")
	}
}

// TestExecChildSurvivesOtherThreadsExiting guards against golang/go#27505:
// goroutines that lock their thread and exit make the runtime end those
// threads, and a child whose Pdeathsig parent thread ends is killed. The
// child is started from a locked thread, so no exiting goroutine can be on
// it. (Without the lock this fails only when the runtime happens to put a
// thread-killing goroutine on the forking thread.)
func TestExecChildSurvivesOtherThreadsExiting(t *testing.T) {
	done := make(chan Outcome, 1)
	go func() {
		done <- newTestExec().Execute(context.Background(), execAttempt("/bin/sh", "-c", "sleep 0.5"))
	}()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			exited := make(chan struct{})
			go func() {
				defer close(exited)
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			}()
			<-exited
		}
	}()
	out := receive(t, done, 10*time.Second, "attempt")
	close(stop)
	wg.Wait()
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
}
