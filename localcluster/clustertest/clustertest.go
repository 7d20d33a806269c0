// Package clustertest runs real raftcron processes for tests: a local
// cluster (localcluster) that dies with the test and shows its nodes' logs
// when the test fails, and one-shot commands of the binary.
package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
)

// Deadlines of the multi-process tests; generous for a loaded 2-core box.
const (
	ReadyTimeout = 60 * time.Second
	CLITimeout   = 30 * time.Second
)

// Start starts a cluster as o says and waits until every node is ready
// (and the ACLs are bootstrapped with o.ACL). o.Binary defaults to
// testutil.Binary, o.Dir to a directory of the test's. Cleanup kills every
// node and, if the test failed, logs what each wrote.
func Start(t testing.TB, o localcluster.Options) *localcluster.Cluster {
	t.Helper()
	if o.Binary == "" {
		o.Binary = testutil.Binary(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	c, err := localcluster.Launch(o)
	if err != nil {
		t.Fatalf("start a cluster: %v", err)
	}
	t.Cleanup(func() { stop(t, c) })
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if o.ACL {
		if _, err := c.BootstrapACL(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func stop(t testing.TB, c *localcluster.Cluster) {
	if err := c.Crash(); err != nil {
		t.Error(err)
	}
	if !t.Failed() {
		return
	}
	for _, n := range c.Nodes() {
		logs, _ := os.ReadFile(n.LogPath)
		t.Logf("---- log of %s ----\n%s", n.ID, logs)
	}
}

// Leader waits until a running node says it leads, and returns it.
func Leader(t testing.TB, c *localcluster.Cluster) *localcluster.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Follower returns a running node that is not the leader.
func Follower(t testing.TB, c *localcluster.Cluster) *localcluster.Node {
	t.Helper()
	if f := c.Followers(Leader(t, c)); len(f) > 0 {
		return f[0]
	}
	t.Fatal("no running follower")
	return nil
}

// Result is what one command line of the binary produced.
type Result struct {
	Code           int
	Stdout, Stderr string
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.Code, r.Stdout, r.Stderr)
}

// ExpectOK fails the test unless the command exited 0 with nothing on
// stderr.
func ExpectOK(t testing.TB, r Result) Result {
	t.Helper()
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("want success, got %s", r)
	}
	return r
}

// ExpectFailure fails the test unless the command exited 1 (a failure, by
// the contract of DESIGN §9) with exactly one stderr line, "raftcron:
// ...", that contains every one of want.
func ExpectFailure(t testing.TB, r Result, want ...string) {
	t.Helper()
	if r.Code != 1 {
		t.Fatalf("want exit 1, got %s", r)
	}
	if strings.Count(r.Stderr, "\n") != 1 || !strings.HasSuffix(r.Stderr, "\n") || !strings.HasPrefix(r.Stderr, "raftcron: ") {
		t.Fatalf("want exactly one line on stderr, got %q", r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Fatalf("stderr %q does not contain %q", r.Stderr, w)
		}
	}
}

// Run runs the binary once with args, stdin (may be empty) and env
// (KEY=value) added to an environment without RAFTCRON_*, and returns its
// exit status and output; it fails the test if the binary does not run or
// outlives CLITimeout.
func Run(t testing.TB, env []string, stdin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CLITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
	cmd.Env = append(proc.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errOut.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		res.Code = exitErr.ExitCode()
	default:
		t.Fatalf("raftcron %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// FreeAddrs picks n distinct free loopback ports (host:port), for flags
// the cluster does not set itself. The kernel may give one away before it
// is bound again: a test that binds it fails then, and says so.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// WaitReady waits until every given node (every node not down, if none is
// given) is ready, failing the test after ReadyTimeout.
func WaitReady(t testing.TB, c *localcluster.Cluster, nodes ...*localcluster.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	if err := c.WaitReady(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
}
