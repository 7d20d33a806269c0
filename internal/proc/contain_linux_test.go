package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// goneWithin bounds how long a run's escaped descendant may outlive the run.
const goneWithin = 5 * time.Second

// withContainment makes this process's runs use mode until the test ends. The
// tests that call it do not run in parallel: the mode is process-wide.
func withContainment(t *testing.T, mode string) {
	t.Helper()
	var cgroups *runCgroups
	switch mode {
	case ContainCgroup:
		cg, err := probeCgroups()
		if err != nil {
			// The subreaper's tests cover this machine; only where neither
			// works is there nothing to test (TestSomeContainmentWorks).
			t.Skipf("no cgroup v2 a run can be put in here (a writable cgroup2 mount, Linux 5.14): %v", err)
		}
		cgroups = cg
	case ContainSubreaper:
		if err := subreaper(); err != nil {
			t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
		}
	}
	old := contain
	contain = func() (string, *runCgroups) { return mode, cgroups }
	t.Cleanup(func() { contain = old })
}

// escapeScript starts a grandchild as a daemon does: it leaves the run's
// session and process group (setsid) and its parent (a subshell that exits at
// once), then writes its pid and sleeps. The script then sleeps too, unless
// EXIT is set: then it exits once the test says so (the file exit). Only a
// kill that reaches beyond the run's group and its children ends the
// grandchild. Its environment is the run's unless CLEAR is set.
const escapeScript = `
if [ -n "$CLEAR" ]; then clear="env -i"; fi
( $clear setsid /bin/sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 600' "$D/grandchild" </dev/null >/dev/null 2>&1 & )
while [ ! -e "$D/grandchild" ]; do sleep 0.01; done
if [ -z "$EXIT" ]; then exec sleep 600; fi
while [ ! -e "$D/exit" ]; do sleep 0.01; done`

// escapee is one run of escapeScript.
type escapee struct {
	dir    string
	cmd    Command
	cancel context.CancelCauseFunc
	done   chan Result
}

func newEscapee(t *testing.T, token string, env ...string) *escapee {
	t.Helper()
	setsid := testutil.NeedTool(t, "setsid", "install util-linux")
	dir := t.TempDir()
	mark := "RAFTCRON_FENCING_TOKEN=" + token
	return &escapee{dir: dir, done: make(chan Result, 1), cmd: Command{
		Argv: []string{"/bin/sh", "-c", strings.ReplaceAll(escapeScript, "setsid", setsid)},
		Env:  append([]string{"PATH=/bin:/usr/bin", "D=" + dir, mark}, env...),
		Mark: mark,
	}}
}

// start runs the script under limit (0: none) and returns the grandchild's
// pid once it has left the run's process group. The run ends with the test
// at the latest.
func (e *escapee) start(t *testing.T, limit time.Duration) int {
	t.Helper()
	parent, cancel := context.WithCancelCause(context.Background())
	e.cancel = cancel
	go func() {
		ctx, cancel := WithLimit(parent, 0, limit)
		defer cancel()
		e.done <- Run(parent, ctx, e.cmd)
	}()
	t.Cleanup(func() {
		cancel(errors.New("test over"))
		select {
		case r := <-e.done:
			e.done <- r
		case <-time.After(goneWithin + WaitDelay):
		}
	})
	pid := testutil.ReadPidFile(t, filepath.Join(e.dir, "grandchild"))
	t.Cleanup(func() { testutil.KillIfSleeping(pid) })
	if sid, _ := unix.Getsid(pid); sid != pid {
		t.Fatalf("grandchild %d is in session %d: it did not leave the run's", pid, sid)
	}
	return pid
}

// exit lets a run with EXIT set exit.
func (e *escapee) exit(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "exit"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *escapee) result(t *testing.T) Result {
	t.Helper()
	select {
	case r := <-e.done:
		e.done <- r
		return r
	case <-time.After(goneWithin + WaitDelay):
		t.Fatal("the run did not end")
		return Result{}
	}
}

func wantGone(t *testing.T, pid int, what string) {
	t.Helper()
	testutil.WaitFor(t, goneWithin, what+" gone", func() bool { return testutil.ProcessGone(pid) })
}

// Each way a run ends ends the grandchild that left its process group with
// setsid, under both containments.
func TestSetsidGrandchildEndsWithItsRun(t *testing.T) {
	for _, mode := range []string{ContainCgroup, ContainSubreaper} {
		t.Run(mode, func(t *testing.T) {
			withContainment(t, mode)
			t.Run("cancelled", func(t *testing.T) {
				e := newEscapee(t, "1")
				pid := e.start(t, 0)
				e.cancel(errors.New("run cancelled"))
				if r := e.result(t); r.State != pb.RunState_RUN_STATE_CANCELLED {
					t.Errorf("run ended %v %q, want CANCELLED", r.State, r.Detail)
				}
				wantGone(t, pid, "the grandchild of a cancelled run")
			})
			t.Run("timed out", func(t *testing.T) {
				e := newEscapee(t, "2")
				pid := e.start(t, time.Second)
				if r := e.result(t); r.State != pb.RunState_RUN_STATE_FAILED || r.Detail != "timeout after 1s" {
					t.Errorf("run ended %v %q, want FAILED by its timeout", r.State, r.Detail)
				}
				wantGone(t, pid, "the grandchild of a timed-out run")
			})
			t.Run("exited", func(t *testing.T) {
				e := newEscapee(t, "3", "EXIT=1")
				pid := e.start(t, 0)
				e.exit(t)
				if r := e.result(t); r.State != pb.RunState_RUN_STATE_SUCCEEDED || strings.Contains(r.Detail, "left open") {
					t.Errorf("run ended %v %q, want SUCCEEDED without waiting on the grandchild's output", r.State, r.Detail)
				}
				wantGone(t, pid, "the grandchild of a finished run")
			})
		})
	}
}

// As a subreaper, the end of one run ends its own orphans and leaves those of
// a run still going; an orphan whose environment was cleared belongs to no
// run and ends with the next run that ends, its own or not.
func TestSubreaperEndsOnlyTheEndingRunsOrphans(t *testing.T) {
	withContainment(t, ContainSubreaper)
	going := newEscapee(t, "10")
	kept := going.start(t, 0)
	cleared := newEscapee(t, "11", "CLEAR=1", "EXIT=1")
	unclaimed := cleared.start(t, 0)
	ending := newEscapee(t, "12", "EXIT=1")
	own := ending.start(t, 0)
	ending.exit(t)
	ending.result(t)
	wantGone(t, own, "the ended run's orphan")
	wantGone(t, unclaimed, "the orphan that cleared its environment")
	if testutil.ProcessGone(kept) {
		t.Fatal("the orphan of a run still going was killed when another run ended")
	}
	cleared.exit(t)
	cleared.result(t)
	going.cancel(errors.New("done"))
	going.result(t)
	wantGone(t, kept, "the orphan of the cancelled run")
}

// The control: with only the process group killed, a grandchild that called
// setsid outlives its run. Without it the tests above could not fail.
func TestSetsidGrandchildEscapesTheGroupKillAlone(t *testing.T) {
	withContainment(t, ContainNone)
	e := newEscapee(t, "20")
	pid := e.start(t, 0)
	e.cancel(errors.New("run cancelled"))
	e.result(t)
	if testutil.ProcessGone(pid) {
		t.Fatal("the grandchild died with its group: setsid did not escape it, so the tests above prove nothing")
	}
}

// Some containment works on every Linux machine the tests run on: at least
// the subreaper, and cgroups where the tests run as root on a cgroup v2 host.
func TestSomeContainmentWorks(t *testing.T) {
	if err := subreaper(); err != nil {
		testutil.SkipOrFail(t, "neither a cgroup nor the subreaper can contain a run here: %v", err)
	}
	if _, err := probeCgroups(); err != nil {
		t.Logf("cgroups unavailable here (%v): runs are contained by the subreaper", err)
	}
}

// The cgroups of a process that died (a node killed with SIGKILL) are killed
// and removed by the next process's probe.
func TestProbeSweepsCgroupsOfDeadProcesses(t *testing.T) {
	c, err := probeCgroups()
	if err != nil {
		t.Skipf("no cgroup v2 a run can be put in here: %v", err)
	}
	base := filepath.Dir(c.parent)
	stale := filepath.Join(base, fmt.Sprintf("%s%d", runParentPrefix, deadPid(t)))
	if err := os.MkdirAll(filepath.Join(stale, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(stale, "7")); _ = os.Remove(stale) })
	if _, err := probeCgroups(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cgroups of a dead process stayed: %v", err)
	}
	if _, err := os.Stat(c.parent); err != nil {
		t.Fatalf("the sweep removed this process's own cgroups: %v", err)
	}
}

// deadPid is a pid no process has.
func deadPid(t *testing.T) int {
	for pid := 4_000_000; pid > 3_000_000; pid -= 7919 {
		if !processExists(pid) {
			return pid
		}
	}
	t.Fatal("no free pid found")
	return 0
}
