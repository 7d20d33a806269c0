package worker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/worker"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A command whose env would make its shell run code of the env's choosing
// is refused by the worker's own policy, whatever the cluster registered:
// FAILED exec_denied naming the variable, and nothing runs. ExecEnvAllow
// opens it.
func TestCommandEnvRefusedByTheWorkersPolicy(t *testing.T) {
	n := newNode(t, 10*time.Second)
	marker := filepath.Join(t.TempDir(), "ran")
	target := func(env map[string]string) *pb.WorkerTarget {
		return &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/sh", "-c", "date"}, Env: env}
	}
	startWorker(t, worker.Config{ID: "w1", Addrs: []string{n.addr}, ExecAllow: []string{"/bin/sh"}, ExecUser: testutil.ExecUser()}, nil)
	o := n.got.wait(t, n.submit(context.Background(), target(map[string]string{
		"PATH": "/bin:/usr/bin", "BASH_FUNC_date%%": "() { touch " + marker + "; }"}), 0))
	if o.State != failed || o.Reason != dispatch.ReasonExecDenied || !strings.Contains(o.Detail, `"BASH_FUNC_date%%"`) {
		t.Fatalf("%v (reason %q) %q, want FAILED exec_denied naming BASH_FUNC_date%%%%", o.State, o.Reason, o.Detail)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused command ran (stat: %v)", err)
	}

	startWorker(t, worker.Config{ID: "w2", Pool: "open", Addrs: []string{n.addr}, ExecAllow: []string{"/bin/sh"},
		ExecUser: testutil.ExecUser(), ExecEnvAllow: []string{"BASH_ENV"}}, nil)
	opened := target(map[string]string{"BASH_ENV": "/dev/null"})
	opened.Pool = "open"
	if o := n.got.wait(t, n.submit(context.Background(), opened, 0)); o.State != succeeded {
		t.Fatalf("a command setting an opened variable: %v %q", o.State, o.Detail)
	}
}

// A worker running as root runs commands only as a user it is told: none
// is refused, naming ExecUser; root itself is allowed. Without commands,
// or as another user, nothing is asked.
func TestRootWorkerWithCommandsNeedsExecUser(t *testing.T) {
	worker.SetEUID(t, 0)
	cfg := worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, ExecAllow: []string{"/usr/local/bin/*"}}
	if _, err := worker.New(cfg); !errors.Is(err, worker.ErrConfig) || !strings.Contains(err.Error(), "ExecUser: required: the worker runs as root") {
		t.Fatalf("New as root with commands and no ExecUser = %v, want ErrConfig naming ExecUser", err)
	}
	cfg.ExecUser = "root"
	if _, err := worker.New(cfg); err != nil {
		testutil.SkipOrFail(t, "no user root here to name: %v", err)
	}
	if _, err := worker.New(worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}}); err != nil {
		t.Fatalf("a root worker without commands: %v", err)
	}
	worker.SetEUID(t, 1000)
	if _, err := worker.New(worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, ExecAllow: []string{"/bin/*"}}); err != nil {
		t.Fatalf("a worker as uid 1000 with commands: %v", err)
	}
}

// A command run that is cancelled or times out takes along what it left
// outside its process group, as a node's exec run does: its cgroup is
// killed, or its orphans, re-parented to the worker.
func TestCommandsDaemonEndsWithTheRun(t *testing.T) {
	testutil.NeedTool(t, "setsid", "install util-linux")
	if proc.Containment() == proc.ContainNone {
		testutil.SkipOrFail(t, "neither a cgroup nor the subreaper contains runs here")
	}
	n := newNode(t, 10*time.Second)
	startWorker(t, worker.Config{Addrs: []string{n.addr}, ExecAllow: []string{"/bin/sh"}, ExecUser: testutil.ExecUser()}, nil)
	for name, timeout := range map[string]time.Duration{"cancelled": 0, "timed out": time.Second} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/sh", "-c",
				`( setsid /bin/sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 60' "$D/daemon" </dev/null >/dev/null 2>&1 & )
sleep 60`}, Env: map[string]string{"D": dir, "PATH": "/bin:/usr/bin"}}
			if timeout > 0 {
				target.Timeout = durationpb.New(timeout)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			a := n.submit(ctx, target, 0)
			pid := testutil.ReadPidFile(t, filepath.Join(dir, "daemon"))
			t.Cleanup(func() { testutil.KillIfSleeping(pid) })
			if timeout == 0 {
				cancel(errors.New("run cancelled"))
			}
			if o := n.got.wait(t, a); o.State == succeeded {
				t.Fatalf("outcome %v %q, want the run cancelled or failed by its timeout", o.State, o.Detail)
			}
			testutil.WaitFor(t, 5*time.Second, "the run's daemon gone", func() bool { return testutil.ProcessGone(pid) })
		})
	}
}
