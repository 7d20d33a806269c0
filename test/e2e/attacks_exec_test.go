//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// execEnv is what the attack sets: a library the loader would preload
// into the allowed program (finding 1). The file need not exist: a
// refusal comes before any start.
var execEnv = map[string]string{"LD_PRELOAD": "libattacker.so"}

// checkEnvRefused (finding 1): a job whose env makes bash define a
// function or the loader preload a library is refused at registration with
// PermissionDenied naming the variable, even for a management token, exec
// and worker targets alike; the node that opens LD_PRELOAD still refuses
// the rest.
func (c *secureCluster) checkEnvRefused() {
	t := c.t
	strict, open := pb.NewJobServiceClient(c.conn), pb.NewJobServiceClient(c.dial(c.lc.Node(envAllowNode).Addr))
	sh := []string{"/bin/sh", "-c", "date"}
	bashFunc := map[string]string{"BASH_FUNC_date%%": "() { id; }"}
	for _, tc := range []struct {
		via  pb.JobServiceClient
		what string
		spec *pb.JobSpec
		name string
	}{
		{strict, "exec.env BASH_FUNC_date%%", &pb.JobSpec{Exec: &pb.ExecTarget{Command: sh, Env: bashFunc}}, `"BASH_FUNC_date%%"`},
		{strict, "exec.env LD_PRELOAD", &pb.JobSpec{Exec: &pb.ExecTarget{Command: sh, Env: execEnv}}, `"LD_PRELOAD"`},
		{strict, "worker.env LD_PRELOAD", &pb.JobSpec{Worker: &pb.WorkerTarget{Pool: "batch", Command: sh, Env: execEnv}}, `"LD_PRELOAD"`},
		{open, "exec.env BASH_FUNC_date%% through " + envAllowNode, &pb.JobSpec{Exec: &pb.ExecTarget{Command: sh, Env: bashFunc}}, `"BASH_FUNC_date%%"`},
	} {
		tc.spec.Name, tc.spec.Schedule = "env-injection", "0 0 1 1 *"
		_, err := tc.via.ApplyJob(callCtx(t, c.mgmt), &pb.ApplyJobRequest{Spec: tc.spec})
		wantDenied(t, "ApplyJob with "+tc.what, err, tc.name)
	}
	_, err := strict.GetJob(callCtx(t, c.mgmt), &pb.GetJobRequest{Name: "env-injection"})
	wantCode(t, "GetJob of the refused job", err, codes.NotFound)
}

// checkEnvAtDispatch (finding 1): jobs that set LD_PRELOAD, registered
// through the one node whose policy opens it, are refused again where they
// would run: by the leader, whose own policy refuses it, and by the worker
// of the pool, whose policy refuses it too. Both runs fail with exec_denied
// naming the variable.
func (c *secureCluster) checkEnvAtDispatch() {
	t := c.t
	open := pb.NewJobServiceClient(c.dial(c.lc.Node(envAllowNode).Addr))
	sh := []string{"/bin/sh", "-c", "date"}
	specs := []*pb.JobSpec{
		{Name: "preload-exec", Schedule: "0 0 1 1 *", Exec: &pb.ExecTarget{Command: sh, Env: execEnv}},
		{Name: "preload-worker", Schedule: "0 0 1 1 *", Worker: &pb.WorkerTarget{Pool: "batch", Command: sh, Env: execEnv}},
	}
	for _, spec := range specs {
		if _, err := open.ApplyJob(callCtx(t, c.mgmt), &pb.ApplyJobRequest{Spec: spec}); err != nil {
			t.Fatalf("ApplyJob %s through %s (--exec-env-allow LD_PRELOAD): %v", spec.GetName(), envAllowNode, err)
		}
	}
	c.leadElsewhere(envAllowNode)
	for _, spec := range specs {
		run := c.runToEnd(c.trigger(spec.GetName()))
		a := run.GetAttempts()[len(run.GetAttempts())-1]
		if run.GetState() != pb.RunState_RUN_STATE_FAILED || run.GetReason() != "exec_denied" || !strings.Contains(a.GetDetail(), "LD_PRELOAD") {
			t.Errorf("run of %s: %s, reason %q, detail %q; want failed with exec_denied naming LD_PRELOAD",
				spec.GetName(), run.GetState(), run.GetReason(), a.GetDetail())
		} else {
			t.Logf("%s refused at dispatch (leader %s): %s", spec.GetName(), a.GetNodeId(), a.GetDetail())
		}
		c.deleteJob(spec.GetName())
	}
}

// checkSetsidContained (finding 11): a run's child that leaves its process
// group and session with setsid is killed with the run when it is
// cancelled (the run's cgroup, or the node as child subreaper).
func (c *secureCluster) checkSetsidContained() {
	t := c.t
	setsid := "/usr/bin/setsid"
	if _, err := os.Stat(setsid); err != nil {
		testutil.SkipStepOrFail(t, "the setsid step: %v", err)
		return
	}
	const name = "daemon"
	pidFile := filepath.Join(c.dir, "daemon.pid")
	script := setsid + " /bin/sleep 300 & echo $! > " + pidFile + "; wait"
	c.putJob(&pb.JobSpec{Name: name, Schedule: "0 0 1 1 *", Exec: &pb.ExecTarget{Command: []string{"/bin/sh", "-c", script}}})
	id := c.trigger(name)
	var pid int
	testutil.WaitFor(t, secureRunsTimeout, "the run's grandchild in a session of its own", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		st, ok := procStat(pid)
		return ok && st.session == pid && st.comm == "sleep"
	})
	if _, err := pb.NewRunServiceClient(c.conn).CancelRun(callCtx(t, c.mgmt), &pb.CancelRunRequest{Id: id}); err != nil {
		t.Fatalf("CancelRun %s: %v", id, err)
	}
	if run := c.runToEnd(id); run.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Errorf("run %s after CancelRun: %s, want cancelled", id, run.GetState())
	}
	testutil.WaitFor(t, containTimeout, "the setsid grandchild (pid "+strconv.Itoa(pid)+") gone", func() bool {
		st, ok := procStat(pid)
		return !ok || st.state == "Z" || st.comm != "sleep"
	})
	t.Logf("the setsid grandchild of a cancelled run is gone (%s)", c.containment())
	c.deleteJob(name)
}

// containTimeout bounds how long a run's leftovers may outlive it: the
// subreaper's sweep takes at most 2 s.
const containTimeout = 5 * time.Second

// containment is how the leader contains runs, as it logs at start.
func (c *secureCluster) containment() string {
	logs, _ := os.ReadFile(c.leaderNode().LogPath)
	line := firstLine(string(logs), "exec_containment=")
	if _, after, ok := strings.Cut(line, "exec_containment="); ok {
		return "exec_containment=" + strings.Fields(after)[0]
	}
	return "exec_containment not logged"
}

// stat is what /proc/PID/stat says of a process.
type stat struct {
	comm, state string
	session     int
}

// procStat reads /proc/pid/stat ("pid (comm) state ppid pgrp session
// ..."); false if there is no such process.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil || pid <= 0 {
		return stat{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 4 {
		return stat{}, false
	}
	session, _ := strconv.Atoi(f[3])
	return stat{comm: s[open+1 : end], state: f[0], session: session}, true
}

// leadElsewhere makes sure id does not lead: if it does, leadership goes
// to another node.
func (c *secureCluster) leadElsewhere(id string) {
	t := c.t
	if c.leaderNode().ID != id {
		return
	}
	other := "n1"
	if id == other {
		other = "n2"
	}
	if _, err := pb.NewClusterServiceClient(c.conn).TransferLeadership(callCtx(t, c.mgmt), &pb.TransferLeadershipRequest{Id: other}); err != nil {
		t.Fatalf("TransferLeadership to %s: %v", other, err)
	}
	testutil.WaitFor(t, leaderTimeout, "a leader other than "+id, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n := c.lc.CurrentLeader(ctx)
		return n != nil && n.ID != id
	})
}

// putJob registers spec with the management token.
func (c *secureCluster) putJob(spec *pb.JobSpec) {
	c.t.Helper()
	if _, err := pb.NewJobServiceClient(c.conn).ApplyJob(callCtx(c.t, c.mgmt), &pb.ApplyJobRequest{Spec: spec}); err != nil {
		c.t.Fatalf("ApplyJob %s: %v", spec.GetName(), err)
	}
}

// deleteJob deletes a job with the management token.
func (c *secureCluster) deleteJob(name string) {
	c.t.Helper()
	if _, err := pb.NewJobServiceClient(c.conn).DeleteJob(callCtx(c.t, c.mgmt), &pb.DeleteJobRequest{Name: name}); err != nil {
		c.t.Fatalf("DeleteJob %s: %v", name, err)
	}
}

// trigger runs a job now with the management token and returns the run's
// ID.
func (c *secureCluster) trigger(name string) string {
	c.t.Helper()
	resp, err := pb.NewJobServiceClient(c.conn).TriggerJob(callCtx(c.t, c.mgmt), &pb.TriggerJobRequest{Name: name})
	if err != nil {
		c.t.Fatalf("TriggerJob %s: %v", name, err)
	}
	return resp.GetRun().GetId()
}

// runToEnd waits until run id is neither dispatched nor retrying, and
// returns it.
func (c *secureCluster) runToEnd(id string) *pb.Run {
	c.t.Helper()
	var run *pb.Run
	testutil.WaitFor(c.t, secureRunsTimeout, "run "+id+" ended", func() bool {
		resp, err := pb.NewRunServiceClient(c.conn).GetRun(callCtx(c.t, c.mgmt), &pb.GetRunRequest{Id: id})
		if err != nil {
			c.t.Fatalf("GetRun %s: %v", id, err)
		}
		run = resp.GetRun()
		s := run.GetState()
		return s != pb.RunState_RUN_STATE_DISPATCHED && s != pb.RunState_RUN_STATE_RETRYING && len(run.GetAttempts()) > 0
	})
	return run
}
