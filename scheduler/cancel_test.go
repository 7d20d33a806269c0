package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// promptly bounds how long a cancelled attempt may take to stop: the stuck
// targets below would hold it for a minute.
const promptly = 5 * time.Second

func withExecutor(ex dispatch.Executor) harnessOpt {
	return func(c *Config) { c.Executor = ex }
}

func realExecutor() dispatch.Executor {
	return dispatch.NewRouter(dispatch.NewHTTPExecutor(nil), dispatch.NewExecExecutor(dispatch.ExecConfig{Allow: anyProgram{}}))
}

// anyProgram lets exec jobs run any program with any env: the node's exec policy is not
// what these tests are about.
type anyProgram struct{}

func (anyProgram) Allow(string) error { return nil }

func (anyProgram) AllowEnv(map[string]string) error { return nil }

func cancelCommand(runID string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CancelRun{CancelRun: &pb.CancelRunCommand{RunId: runID}}}
}

// openRun waits for the job's one open run.
func (h *harness) openRun(job string) *pb.Run {
	h.t.Helper()
	var run *pb.Run
	h.waitFor("an open run of "+job, func() bool {
		open := h.runsIn(job, pb.RunState_RUN_STATE_DISPATCHED)
		if len(open) == 1 {
			run = open[0]
		}
		return run != nil
	})
	return run
}

// cancelStuck commits a cancel of the job's open run, whose attempt is
// stuck in its target, and waits until the attempt has stopped.
func (h *harness) cancelStuck(job string) *pb.Run {
	h.t.Helper()
	run := h.openRun(job)
	start := time.Now()
	h.apply(cancelCommand(run.GetId()))
	h.waitFor("the cancelled attempt to stop", func() bool { return h.s.InFlight() == 0 })
	if d := time.Since(start); d > promptly {
		h.t.Fatalf("the cancelled attempt took %v to stop, want at most %v", d, promptly)
	}
	h.waiting = 0
	h.settle()
	got, err := h.fsm.Run(run.GetId())
	if err != nil || got.GetState() != pb.RunState_RUN_STATE_CANCELLED || got.GetReason() != fsm.ReasonCancelRequested {
		h.t.Fatalf("run after the cancel: %v (%v), want CANCELLED (%s)", got, err, fsm.ReasonCancelRequested)
	}
	return got
}

func TestCancelStopsAStuckWebhook(t *testing.T) {
	received := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- struct{}{}
		select {
		case <-r.Context().Done():
			stopped <- r.Context().Err()
		case <-time.After(time.Minute):
			stopped <- errors.New("the request was never cancelled")
		}
	}))
	defer srv.Close()

	h := newHarness(t, withExecutor(realExecutor()))
	job := spec("hook", "@every 10s")
	job.Http.Url = srv.URL
	h.putJob(job)
	h.lead()
	h.step(9 * time.Second)
	h.waiting = 1 // the stuck attempt, from the next slot on
	h.step(time.Second)
	select {
	case <-received:
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook was never called")
	}
	run := h.cancelStuck("hook")
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the webhook's request ended with %v, want it cancelled", err)
	}
	if n := len(run.GetAttempts()); n != 1 {
		t.Fatalf("the cancelled run has %d attempts, want 1", n)
	}
}

func TestCancelKillsAStuckExec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("exec attempts run in their own process group on Linux only")
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	h := newHarness(t, withExecutor(realExecutor()))
	job := spec("exec", "@every 10s")
	job.Http = nil
	job.Exec = &pb.ExecTarget{
		Command: []string{"/bin/sh", "-c", `echo $$ > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE" && exec sleep 60`},
		Env:     map[string]string{"PIDFILE": pidFile},
	}
	h.putJob(job)
	h.lead()
	h.step(9 * time.Second)
	h.waiting = 1
	h.step(time.Second)
	var pid int
	h.waitFor("the exec attempt to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err == nil && pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	h.cancelStuck("exec")
	// The executor kills the process group and reaps it before it returns.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the cancelled exec attempt's process %d still exists (kill -0: %v)", pid, err)
	}
}

func TestCancelledRunIsNotRedispatchedAfterFailover(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP)) // at_least_once
	h.exec.gate("job")
	h.lead()
	h.step(10 * time.Second)
	run := h.openRun("job")
	h.apply(cancelCommand(run.GetId()))
	h.waitFor("the cancelled attempt to stop", func() bool { return h.s.InFlight() == 0 })

	h.s.SetLeader(false)
	h.prop.term.Add(1)
	h.lead()
	h.step(2 * time.Second)
	for _, b := range h.prop.fireBatches() {
		for _, f := range b.GetFires() {
			if f.GetRunId() == run.GetId() {
				t.Fatalf("the new leader proposed %v for the cancelled run", f)
			}
		}
	}
	for _, a := range h.exec.startedOf("job") {
		if a.RunID == run.GetId() && a.Token != lastToken(run) {
			t.Fatalf("the cancelled run was attempted again: %+v", a)
		}
	}
}

// A cancel may commit after the fire that created the run and before the
// leader learns of that fire's commit and dispatches it: the attempt must
// still be stopped.
func TestCancelCommittedBeforeDispatchStopsTheAttempt(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.exec.gate("job") // only a cancel ends an attempt
	done := make(chan string, 1)
	var once atomic.Bool
	h.prop.after = func(cmd *pb.Command, res *pb.CommandResult) {
		for _, f := range res.GetFires() {
			if !f.GetAccepted() || !once.CompareAndSwap(false, true) {
				continue
			}
			cancel := cancelCommand(f.GetRunId())
			cancel.ProposedAtUnixNano = cmd.GetProposedAtUnixNano()
			if r, err := h.prop.Apply(context.Background(), cancel); err != nil || r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
				panic(fmt.Sprintf("cancel of %s: %v %v", f.GetRunId(), r, err))
			}
			done <- f.GetRunId()
		}
	}
	h.lead()
	h.clock.Advance(10 * time.Second)
	h.s.wakeLoop()
	var cancelled string
	select {
	case cancelled = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing fired")
	}
	h.waitFor("the attempt of the cancelled run to stop", func() bool { return h.s.InFlight() == 0 })
	for _, r := range h.exec.finishedOf("job") {
		if r.a.RunID == cancelled && r.state != pb.RunState_RUN_STATE_CANCELLED {
			t.Fatalf("the attempt of the cancelled run ended %v, want CANCELLED", r.state)
		}
	}
}

func lastToken(r *pb.Run) uint64 {
	atts := r.GetAttempts()
	return atts[len(atts)-1].GetToken()
}
