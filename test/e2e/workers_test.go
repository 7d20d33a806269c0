//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Remote workers (DESIGN §14) under faults: `raftcron worker` processes of
// one pool run jobs whose command posts to the sink with the run's fencing
// headers, beside the webhook jobs, and the checker judges them alike.

// workerLease is the nodes' --worker-lease in these scenarios: short, so
// that a lost worker is noticed within a scenario.
const workerLease = 2 * time.Second

// workerJobs run on the workers: the 2 s one is at_least_once (a lost
// attempt is re-dispatched), the 3 s one at_most_once (it is recorded
// unknown).
var workerJobs = []JobInfo{
	{Name: "e2e-w2s", Period: 2, Worker: true},
	{Name: "e2e-w3s", Period: 3, AtMostOnce: true, Worker: true},
}

// workerRunTime is how long a worker job's command waits before it
// writes: a fault can land while it runs.
const workerRunTime = 800 * time.Millisecond

// workerScript posts to the sink as the node's webhook would, with the
// headers named by fence from the variables named by fence.
var workerScript = func() string {
	headers := [][2]string{
		{fence.HeaderFencingToken, fence.EnvFencingToken},
		{fence.HeaderJob, fence.EnvJob},
		{fence.HeaderRunID, fence.EnvRunID},
		{fence.HeaderScheduledAt, fence.EnvScheduledAt},
		{fence.HeaderAttempt, fence.EnvAttempt},
		{fence.HeaderIdempotencyKey, fence.EnvIdempotencyKey},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sleep %.1f; exec curl -sS -f -m 5 -X POST", workerRunTime.Seconds())
	for _, h := range headers {
		fmt.Fprintf(&b, ` -H "%s: $%s"`, h[0], h[1])
	}
	b.WriteString(` "$SINK/$` + fence.EnvJob + `"`)
	return b.String()
}()

func workerSpec(j JobInfo, sinkURL string) *pb.JobSpec {
	spec := stableSpec(j, sinkURL)
	spec.Http = nil
	spec.Worker = &pb.WorkerTarget{
		Pool:    "e2e",
		Command: []string{"/bin/sh", "-c", workerScript},
		// A command's environment is its env alone (DESIGN §11).
		Env:     map[string]string{"SINK": sinkURL, "PATH": "/usr/bin:/bin"},
		Timeout: durationpb.New(10 * time.Second),
	}
	return spec
}

// workerProc is one `raftcron worker` process, restartable.
type workerProc struct {
	id      string
	k       int
	logPath string

	// mu guards proc and state.
	mu    sync.Mutex
	proc  *proc.Process
	state localcluster.State
}

// startWorkers starts the scenario's workers, each knowing every node.
func (s *scenario) startWorkers(bin string) {
	for k := range s.opts.workers {
		w := &workerProc{id: fmt.Sprintf("w%d", k+1), k: k, logPath: filepath.Join(s.dir, fmt.Sprintf("w%d.log", k+1))}
		s.workers = append(s.workers, w)
		s.startWorker(w, bin)
	}
	s.t.Cleanup(func() {
		for _, w := range s.workers {
			w.signalTree(syscall.SIGCONT)
			w.kill(s.t)
		}
	})
}

func (s *scenario) startWorker(w *workerProc, bin string) {
	s.t.Helper()
	addrs := make([]string, len(s.c.nodes))
	for i := range s.c.nodes {
		addrs[i] = s.c.net.Addr(i)
	}
	args := append([]string{"worker", "--id", w.id, "--pool", "e2e", "--exec-allow", "/bin/sh",
		"--concurrency", "4", "--addr", strings.Join(addrs, ",")}, testutil.ExecUserArgs()...)
	cmd, err := s.c.net.WorkerCommand(w.k, bin, args...)
	if err != nil {
		s.t.Fatalf("worker %s: %v", w.id, err)
	}
	cmd.Env = proc.Environ()
	p, err := proc.Start(cmd, w.logPath)
	if err != nil {
		s.t.Fatalf("start worker %s: %v", w.id, err)
	}
	w.mu.Lock()
	w.proc, w.state = p, localcluster.Running
	w.mu.Unlock()
}

func (w *workerProc) procState() localcluster.State {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil || w.proc.Exited() {
		return localcluster.Down
	}
	return w.state
}

func (w *workerProc) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil || w.proc.Exited() {
		return 0
	}
	return w.proc.Pid()
}

// kill SIGKILLs the worker and waits for it to exit; its command dies
// with it (Pdeathsig).
func (w *workerProc) kill(t testing.TB) {
	w.mu.Lock()
	p := w.proc
	w.mu.Unlock()
	if p == nil || p.Exited() {
		return
	}
	if !p.Kill(exitTimeout) {
		t.Fatalf("worker %s did not exit within %s of SIGKILL", w.id, exitTimeout)
	}
}

// signalTree sends sig to the worker's commands (each a process group of
// its own) and to the worker; SIGCONT wakes the worker last.
func (w *workerProc) signalTree(sig syscall.Signal) {
	pid := w.pid()
	if pid == 0 {
		return
	}
	if sig == syscall.SIGCONT {
		_ = syscall.Kill(pid, sig)
	}
	for _, c := range children(pid) {
		_ = syscall.Kill(-c, sig)
	}
	if sig != syscall.SIGCONT {
		_ = syscall.Kill(pid, sig)
	}
	w.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		w.state = localcluster.Paused
	case syscall.SIGCONT:
		w.state = localcluster.Running
	}
	w.mu.Unlock()
}

// children lists pid's child processes.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// running is a worker's command of one attempt, seen from outside.
type running struct {
	w     *workerProc
	pid   int // the command's process, leader of its group
	token uint64
	runID string
}

// busyWorker waits until some worker runs an attempt of job that has
// not written yet, and returns it.
func (s *scenario) busyWorker(job string) running {
	s.t.Helper()
	var found running
	testutil.WaitFor(s.t, 20*time.Second, "a worker running "+job, func() bool {
		for _, w := range s.workers {
			if w.procState() != localcluster.Running {
				continue
			}
			for _, c := range children(w.pid()) {
				env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c))
				if err != nil {
					continue
				}
				vars := map[string]string{}
				for _, kv := range bytes.Split(env, []byte{0}) {
					if k, v, ok := strings.Cut(string(kv), "="); ok {
						vars[k] = v
					}
				}
				token, _ := strconv.ParseUint(vars[fence.EnvFencingToken], 10, 64)
				// Still sleeping: its write is yet to come.
				if vars[fence.EnvJob] == job && token > 0 && hasChild(c, "sleep") {
					found = running{w: w, pid: c, token: token, runID: vars[fence.EnvRunID]}
					return true
				}
			}
		}
		return false
	})
	return found
}

func hasChild(pid int, comm string) bool {
	for _, c := range children(pid) {
		if processComm(c) == comm {
			return true
		}
	}
	return false
}

func processComm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// healWorkers wakes stopped workers and restarts dead ones.
func (s *scenario) healWorkers() {
	for _, w := range s.workers {
		switch w.procState() {
		case localcluster.Paused:
			w.signalTree(syscall.SIGCONT)
		case localcluster.Down:
			s.startWorker(w, s.c.bin)
		}
	}
}

func (s *scenario) workerEvent(kind string, r running, detail string) {
	s.c.event(kind, nil, fmt.Sprintf("worker %s, %s token %d: %s", r.w.id, r.runID, r.token, detail))
}

// killBusyWorker SIGKILLs a worker while it runs an attempt of the
// at_least_once worker job, and restarts it after down: its stream breaks,
// and the leader re-dispatches the attempt to the other worker.
func (s *scenario) killBusyWorker(down time.Duration) {
	s.t.Helper()
	r := s.busyWorker("e2e-w2s")
	r.w.kill(s.t)
	s.workerEvent("kill-worker", r, fmt.Sprintf("SIGKILL mid-run, down %s", down))
	time.Sleep(down)
	s.startWorker(r.w, s.c.bin)
	s.c.event("restart-worker", nil, r.w.id)
}

// pauseBusyWorker SIGSTOPs a worker and its command mid-run for longer
// than its lease: the leader re-dispatches the attempt to the other
// worker, under a larger token. Then the command wakes first and writes
// late with the old token, which the sink must refuse; then the worker
// wakes, and its late outcome is superseded.
func (s *scenario) pauseBusyWorker(d time.Duration) {
	s.t.Helper()
	r := s.busyWorker("e2e-w2s")
	r.w.signalTree(syscall.SIGSTOP)
	s.workerEvent("pause-worker", r, fmt.Sprintf("SIGSTOP of the worker and its command for %s", d))
	time.Sleep(d)
	_ = syscall.Kill(-r.pid, syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wrote := s.sink.Wait(ctx, func(as []Attempt) bool {
		for _, a := range as {
			if a.Token == r.token {
				return true
			}
		}
		return false
	})
	s.workerEvent("resume-command", r, fmt.Sprintf("the late write reached the sink: %v", wrote))
	r.w.signalTree(syscall.SIGCONT)
	s.workerEvent("resume-worker", r, "")
}

// partitionBusyWorker cuts a worker off from every node while it runs an
// attempt (the sink stays reachable), for d.
func (s *scenario) partitionBusyWorker(d time.Duration) {
	s.t.Helper()
	r := s.busyWorker("e2e-w2s")
	if err := s.c.net.CutWorker(r.w.k); err != nil {
		s.t.Fatalf("cut worker %s: %v", r.w.id, err)
	}
	s.workerEvent("partition-worker", r, fmt.Sprintf("cut off from every node for %s", d))
	time.Sleep(d)
	if err := s.c.net.HealAll(); err != nil {
		s.t.Fatalf("heal: %v", err)
	}
	s.c.event("heal", nil, "worker "+r.w.id)
}

var workerServeArgs = []string{"--worker-lease", workerLease.String()}

// TestWorkersKill3: a worker SIGKILLed mid-run (its attempt re-dispatched
// to the other worker under a larger token), then the leader SIGKILLed
// while the workers run (they reconnect to the new leader, which
// re-dispatches the orphans): no slot lost or doubled.
func TestWorkersKill3(t *testing.T) {
	s := newScenario(t, "workers-kill3", scenarioOptions{nodes: 3, workers: 2, serveArgs: workerServeArgs,
		expect: Expect{LeaderChanges: 1, Redispatches: 2}})
	s.run(4 * time.Second)
	s.killBusyWorker(3 * time.Second)
	s.run(3 * time.Second)
	alignToSlot(2, 300*time.Millisecond) // the 2 s worker job is running
	s.killLeader(3 * time.Second)
	s.run(4 * time.Second)
	s.finish("")
}

// TestWorkersPause3: a worker and its command SIGSTOPped past the lease,
// then resumed: the re-dispatch to the other worker takes effect, the
// stale write is refused by the fence, the late outcome is superseded.
func TestWorkersPause3(t *testing.T) {
	s := newScenario(t, "workers-pause3", scenarioOptions{nodes: 3, workers: 2, serveArgs: workerServeArgs,
		expect: Expect{StaleAttempts: 1, Redispatches: 1}})
	s.run(4 * time.Second)
	s.pauseBusyWorker(workerLease + 3*time.Second)
	s.run(4 * time.Second)
	s.finish("")
}

// TestWorkersPartition3: a worker cut off from every node mid-run, past
// its lease: re-dispatched to the other worker; its own write, if it
// lands, is a duplicate or refused.
func TestWorkersPartition3(t *testing.T) {
	if !netnsAvailable() {
		testutil.SkipOrFail(t, "%v", errNoWorkerCut)
	}
	s := newScenario(t, "workers-partition3", scenarioOptions{nodes: 3, workers: 2, serveArgs: workerServeArgs,
		expect: Expect{Redispatches: 1}})
	s.run(4 * time.Second)
	s.partitionBusyWorker(workerLease + 3*time.Second)
	s.run(4 * time.Second)
	s.finish("")
}
