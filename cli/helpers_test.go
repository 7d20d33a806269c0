package cli

// Helpers of this package's tests: command lines run in this process, and
// the raftcron binary run as real processes (a cluster of `serve` nodes,
// one-shot commands) through localcluster. Other multi-process tests of
// this package build on them.

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// exitTimeout bounds a node's graceful stop in these tests.
const exitTimeout = 20 * time.Second

// testRaft are the Raft timings of test nodes: Raft's defaults. Shorter
// ones (300ms) made leadership flap when the 2-core box ran other tests
// alongside, and a flap in the middle of a write is an indeterminate
// outcome that no CLI assertion can absorb.
var testRaft = []string{"--raft-heartbeat", "1s", "--raft-election", "1s", "--raft-lease", "500ms"}

func TestMain(m *testing.M) { testutil.Main(m) }

type cliResult = clustertest.Result

var (
	expectOK      = clustertest.ExpectOK
	expectFailure = clustertest.ExpectFailure
)

// run runs one command line of the client commands in this process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Execute(NewRoot("test", stdin, stdout, stderr), args)
}

// runInProcess runs one command line in this process.
func runInProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// runCLI runs the binary once with stdin (may be empty).
func runCLI(t testing.TB, stdin string, args ...string) cliResult {
	t.Helper()
	return clustertest.Run(t, nil, stdin, args...)
}

// runCLIEnv is runCLI with env (KEY=value) added to the clean environment.
func runCLIEnv(t testing.TB, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	return clustertest.Run(t, env, stdin, args...)
}

// cliOn runs a client command against node.
func cliOn(t testing.TB, node *localcluster.Node, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLI(t, stdin, append(args, "--addr", node.Addr)...)
}

// startCluster starts n nodes at testRaft with extra flags and waits until
// every one is ready; they die with the test.
func startCluster(t testing.TB, n int, extra ...string) *localcluster.Cluster {
	t.Helper()
	return clustertest.Start(t, localcluster.Options{Nodes: n, Args: append(slices.Clone(testRaft), extra...)})
}

// stopNode stops node gracefully (SIGTERM) and returns its exit status.
func stopNode(t testing.TB, node *localcluster.Node) int {
	t.Helper()
	if err := node.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := node.WaitExit(exitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// restartNode starts a stopped node again on its data dir.
func restartNode(t testing.TB, c *localcluster.Cluster, node *localcluster.Node) {
	t.Helper()
	if err := c.Restart(node.ID); err != nil {
		t.Fatal(err)
	}
}
