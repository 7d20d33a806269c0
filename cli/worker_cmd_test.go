package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster/clustertest"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const workerJob = `name: report
schedule: "@daily"
worker:
  pool: batch
  tags: {region: eu}
  command: [/bin/sh, -c, 'echo "$RAFTCRON_WORKER ran $RAFTCRON_JOB with token $RAFTCRON_FENCING_TOKEN"']
  timeout: 30s
`

// startWorker runs `raftcron worker` until the test ends, with the
// --exec-user of a test (testutil.ExecUser), and returns the path of its
// log, which goes to the test's log if the test fails.
func startWorker(t *testing.T, args ...string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "worker.log")
	args = append(append([]string{"worker"}, args...), testutil.ExecUserArgs()...)
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Env = proc.Environ()
	p, err := proc.Start(cmd, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(exitTimeout)
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("---- log of the worker ----\n%s", logs)
		}
	})
	return logPath
}

// A worker pointed at a follower finds the leader and runs a triggered
// attempt of a worker job; the run shows the worker's output and name,
// and the job file round-trips through job get -o yaml.
func TestCLIWorkerRunsJobs(t *testing.T) {
	c := startCluster(t, 3, "--worker-lease", "2s")
	leader, follower := clustertest.Leader(t, c), clustertest.Follower(t, c)
	startWorker(t, "--id", "w1", "--pool", "batch", "--tags", "region=eu,disk=ssd",
		"--exec-allow", "/bin/sh", "--addr", follower.Addr)

	expectOK(t, cliOn(t, leader, "", "job", "apply", "-f", testutil.WriteFile(t, "report.yaml", workerJob)))
	yaml := expectOK(t, cliOn(t, follower, "", "job", "get", "report", "-o", "yaml")).Stdout
	if r := expectOK(t, cliOn(t, leader, yaml, "job", "apply", "-f", "-")); r.Stdout != "job report unchanged (version 1)\n" {
		t.Fatalf("job get -o yaml applied back: %q\n%s", r.Stdout, yaml)
	}
	if r := expectOK(t, cliOn(t, leader, "", "job", "list")); !strings.Contains(r.Stdout, "worker batch /bin/sh -c") {
		t.Fatalf("job list does not show the worker target:\n%s", r.Stdout)
	}

	expectOK(t, cliOn(t, leader, "", "job", "trigger", "report"))
	var run runView
	testutil.WaitFor(t, 30*time.Second, "the run to succeed on the worker", func() bool {
		r := cliOn(t, follower, "", "run", "list", "--job", "report", "-o", "json")
		var runs []runView
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &runs) != nil || len(runs) == 0 {
			return false
		}
		run = runs[0]
		return run.State == "succeeded"
	})
	a := run.Attempts[0]
	want := "w1 ran report with token "
	if !strings.HasPrefix(a.Output, want) || a.Detail != "worker w1: exit status 0" {
		t.Fatalf("attempt %+v, want output %q... and the worker named in the detail", a, want)
	}
}

// Bad flags fail before anything connects, naming each flag and its rule.
func TestCLIWorkerFlags(t *testing.T) {
	r := runCLI(t, "", "worker", "--id", "W1", "--pool", "batch", "--exec-allow", "bin/*", "--addr", "127.0.0.1:1")
	expectFailure(t, r, `--id: "W1" must match`, `--exec-allow: pattern "bin/*": must be an absolute, clean path pattern`)
	expectFailure(t, runCLI(t, "", "worker", "--id", "w1", "--pool", "batch", "--exec-allow", "/usr/bin/["),
		`--exec-allow: pattern "/usr/bin/[": syntax error in pattern`)
	expectFailure(t, runCLI(t, "", "worker", "--id", "w1", "--pool", "batch", "--tags", "region"),
		`--tags: "region" is not key=value`)
	expectFailure(t, runCLI(t, "", "worker", "--id", "w1", "--pool", "batch", "--concurrency", "0"),
		`--concurrency: "0" is not a positive number`)
}

func TestTargetColumnOfWorkerJobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w    *pb.WorkerTarget
		want string
	}{
		{&pb.WorkerTarget{Pool: "batch", Command: []string{"/usr/bin/render", "a b"}}, `worker batch /usr/bin/render "a b"`},
		{&pb.WorkerTarget{Pool: "billing", Handler: "charge"}, "worker billing handler charge"},
	} {
		if got := target(&pb.JobSpec{Worker: tc.w}); got != tc.want {
			t.Errorf("target = %q, want %q", got, tc.want)
		}
	}
}
