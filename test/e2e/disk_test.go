//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
)

// Disk faults on the leader, injected into its fdatasync calls (bbolt's
// fsync on Linux) with strace. Both need root (to trace a process) and
// strace; without them they skip.

// stallDelay is how long strace holds each fdatasync of the stalled
// leader: past the nodes' --disk-stall-timeout (5 s, the default).
const stallDelay = 8 * time.Second

// failoverWithin is how soon after the stall another node must lead.
const failoverWithin = 20 * time.Second

// TestDiskStall3: the leader's disk stalls (every fdatasync held 8 s). It
// must give up: exit non-zero once a write has been stuck for the 5 s stall
// timeout, so that another node leads within 20 s; the every-second jobs
// lose and double no slot (the checker), their slots of the stall caught up.
func TestDiskStall3(t *testing.T) {
	requireStrace(t)
	s := newScenario(t, "diskstall3", scenarioOptions{nodes: 3, expect: Expect{LeaderChanges: 1}})
	s.run(4 * time.Second)
	s.stallLeaderDisk()
	s.run(3 * time.Second)
	s.finish("")
}

// TestDiskEIO3: the leader's fdatasync fails (EIO) until another node
// leads. Raft steps down on a failed log write, so the leader dispatches
// nothing it could not commit (G2) and the next leader fires every slot.
func TestDiskEIO3(t *testing.T) {
	requireStrace(t)
	s := newScenario(t, "diskeio3", scenarioOptions{nodes: 3, expect: Expect{LeaderChanges: 1}})
	s.run(4 * time.Second)
	s.failLeaderFsync()
	s.run(3 * time.Second)
	s.finish("")
}

func requireStrace(t *testing.T) {
	t.Helper()
	testutil.NeedRoot(t, "injecting disk faults (strace attaches to a node's process)")
	testutil.NeedTool(t, "strace", "apt-get install strace")
}

// stallLeaderDisk holds every fdatasync of the leader for stallDelay until
// it exits, and checks that it exits non-zero, saying why, and that
// another node leads within failoverWithin. The node is then restarted.
func (s *scenario) stallLeaderDisk() {
	s.t.Helper()
	leader := s.c.leader()
	tr := s.traceFsync(leader, fmt.Sprintf("delay_enter=%d", stallDelay.Microseconds()))
	defer tr.stop()
	start := time.Now()
	s.c.event("stall-leader-disk", []*node{leader}, fmt.Sprintf("every fdatasync held %s", stallDelay))

	next := s.c.waitNewLeader(leader)
	took := time.Since(start)
	s.c.event("new-leader", []*node{next}, fmt.Sprintf("%s after the stall began", took.Round(time.Millisecond)))
	if took > failoverWithin {
		s.t.Errorf("%s leads %s after the stall began, want within %s", next.ID, took, failoverWithin)
	}
	code := s.c.waitExit(leader, failoverWithin)
	s.c.event("leader-gave-up", []*node{leader}, fmt.Sprintf("exit status %d after %s", code, time.Since(start).Round(time.Millisecond)))
	if code == 0 {
		s.t.Errorf("%s exited with status 0 after its disk stalled, want non-zero", leader.ID)
	}
	if log, _ := os.ReadFile(leader.LogPath); !bytes.Contains(log, []byte("raft disk write stalled")) {
		s.t.Errorf("%s's log does not say its disk stalled; see %s", leader.ID, leader.LogPath)
	}
	tr.stop()
	s.c.restart(leader)
	s.c.event("restart", []*node{leader}, "on existing data")
	s.c.waitReady(s.c.nodes...)
}

// failLeaderFsync fails every fdatasync of the leader with EIO until
// another node leads, then lets them through again; the old leader may
// stop by itself (Raft stops a node that cannot persist its term) and is
// then restarted.
func (s *scenario) failLeaderFsync() {
	s.t.Helper()
	leader := s.c.leader()
	tr := s.traceFsync(leader, "error=EIO")
	s.c.event("fail-leader-fsync", []*node{leader}, "every fdatasync fails with EIO")
	next := s.c.waitNewLeader(leader)
	tr.stop()
	s.c.event("heal-leader-fsync", []*node{leader}, next.ID+" leads")
	if log, _ := os.ReadFile(leader.LogPath); bytes.Contains(log, []byte("raft disk write stalled")) {
		s.t.Errorf("%s took failing fsyncs for a stalled disk; see %s", leader.ID, leader.LogPath)
	}
	if leader.State() == localcluster.Down {
		s.c.restart(leader)
		s.c.event("restart", []*node{leader}, "on existing data")
	}
	s.c.waitReady(s.c.nodes...)
}

// tracer is strace attached to one node, injecting a fault into its
// fdatasync calls.
type tracer struct {
	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{}
}

// traceFsync attaches strace to n and returns once every thread is traced.
func (s *scenario) traceFsync(n *node, inject string) *tracer {
	s.t.Helper()
	pid := n.Pid()
	if pid == 0 {
		s.t.Fatalf("%s is not running", n.ID)
	}
	cmd := exec.Command("strace", "-f", "-e", "trace=fdatasync", "-e", "inject=fdatasync:"+inject,
		"-o", filepath.Join(s.dir, "strace-"+n.ID+".txt"), "-p", strconv.Itoa(pid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("strace: %v", err)
	}
	tr := &tracer{t: s.t, cmd: cmd, done: make(chan struct{})}
	attached := make(chan struct{})
	go func() {
		defer close(tr.done)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "attached") {
				once = true
				close(attached)
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case <-attached:
	case <-tr.done:
		s.t.Fatalf("strace exited before attaching to %s (pid %d)", n.ID, pid)
	case <-time.After(10 * time.Second):
		tr.stop()
		s.t.Fatalf("strace did not attach to %s (pid %d) within 10s", n.ID, pid)
	}
	return tr
}

// stop detaches strace (it also ends by itself when the node exits).
func (tr *tracer) stop() {
	select {
	case <-tr.done:
		return
	default:
	}
	_ = tr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-tr.done:
	case <-time.After(15 * time.Second):
		_ = tr.cmd.Process.Kill()
		<-tr.done
	}
}
