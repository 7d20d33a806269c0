package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// nodeEnv makes the test binary act as a raftcron node that runs one exec
// attempt and then waits to be killed; its value is the file where the
// attempt's process writes its pid.
const nodeEnv = "RAFTCRON_DISPATCH_TEST_NODE"

func TestMain(m *testing.M) {
	if pidFile := os.Getenv(nodeEnv); pidFile != "" {
		os.Exit(runNode(pidFile))
	}
	if os.Getenv(receiverEnv) != "" {
		os.Exit(runReceiver())
	}
	os.Exit(m.Run())
}

// runNode runs `sleep 60` as an exec attempt. It only returns if the attempt
// ends, which the test that starts it never lets happen.
func runNode(pidFile string) int {
	a := execAttempt("/bin/sh", "-c", `echo $$ > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE" && exec sleep 60`)
	a.Exec.Env = map[string]string{"PIDFILE": pidFile}
	out := newTestExec().Execute(context.Background(), a)
	fmt.Fprintf(os.Stderr, "attempt ended: %v %s\n", out.State, out.Detail)
	return 3
}

func TestExecNoOrphanAfterNodeSIGKILL(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	node := exec.Command(os.Args[0], "-test.run=^$")
	node.Env = append(os.Environ(), nodeEnv+"="+pidFile)
	node.Stderr = os.Stderr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Process.Kill(); _ = node.Wait() })

	pid := testutil.ReadPidFile(t, pidFile)
	t.Cleanup(func() { testutil.KillIfSleeping(pid) })
	// The attempt's process must be the node's child and be running the
	// sleep, or its disappearance would prove nothing.
	testutil.WaitFor(t, 10*time.Second, "attempt process becomes sleep", func() bool { return testutil.ProcessComm(pid) == "sleep" })
	if ppid := parentPid(t, pid); ppid != node.Process.Pid {
		t.Fatalf("attempt process %d has parent %d, want the node %d", pid, ppid, node.Process.Pid)
	}

	if err := node.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = node.Wait()
	testutil.WaitFor(t, 5*time.Second, "the attempt's process dies with its node", func() bool { return testutil.ProcessGone(pid) })
}

func parentPid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after "(comm)": state ppid ...
	var state string
	var ppid int
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	if _, err := fmt.Sscan(string(rest), &state, &ppid); err != nil {
		t.Fatalf("parse /proc/%d/stat: %v", pid, err)
	}
	return ppid
}
