package main

// Helpers that run the raftcron binary as real processes: a cluster of
// `serve` nodes and one-shot CLI commands. Other multi-process tests of this
// package build on them.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/ops"
)

// Deadlines of the multi-process tests; generous for a loaded 2-core box.
const (
	readyTimeout = 30 * time.Second
	exitTimeout  = 20 * time.Second
	cliTimeout   = 30 * time.Second
	pollInterval = 50 * time.Millisecond
)

// testRaft are the Raft timings of test nodes: Raft's defaults. Shorter
// ones (300ms) made leadership flap when the 2-core box ran other tests
// alongside, and a flap in the middle of a write is an indeterminate
// outcome that no CLI assertion can absorb.
var testRaft = []string{"--raft-heartbeat", "1s", "--raft-election", "1s", "--raft-lease", "500ms"}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary returns the raftcron binary: $RAFTCRON_BIN if set, else one built
// once per test run (only tests that need it pay for the build).
func binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("RAFTCRON_BIN"); p != "" {
			// go test runs in the package directory, so a relative path is
			// relative to cmd/node.
			if binPath, binErr = filepath.Abs(p); binErr == nil {
				_, binErr = os.Stat(binPath)
			}
			if binErr != nil {
				binErr = fmt.Errorf("RAFTCRON_BIN: %w", binErr)
			}
			return
		}
		binDir, binErr = os.MkdirTemp("", "raftcron-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "raftcron")
		out, err := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("raftcron binary: %v", binErr)
	}
	return binPath
}

// freeAddrs picks n distinct free local ports by listening on port 0.
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pollInterval)
	}
}

// cliResult is what one command line produced.
type cliResult struct {
	Code           int
	Stdout, Stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.Code, r.Stdout, r.Stderr)
}

// runCLI runs the binary once with stdin (may be empty) and returns its exit
// status and output.
func runCLI(t testing.TB, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLIEnv(t, nil, stdin, args...)
}

// runCLIEnv is runCLI with env (KEY=value) added to the clean environment.
func runCLIEnv(t testing.TB, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(proc.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := cliResult{Stdout: out.String(), Stderr: errOut.String()}
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

// testNode is one `raftcron serve` process, restartable on the same ports
// and data dir.
type testNode struct {
	ID, Addr, HTTPAddr, DataDir string
	args                        []string // serve flags
	logPath                     string

	mu   sync.Mutex // guards proc
	proc *proc.Process
}

// testCluster is a set of nodes bootstrapped together with --peers.
type testCluster struct {
	Nodes []*testNode
}

// startCluster starts n nodes with --peers naming all of them and waits until
// every one is ready. Cleanup kills what still runs and, if the test failed,
// prints the nodes' logs.
func startCluster(t testing.TB, n int, extra ...string) *testCluster {
	t.Helper()
	return startClusterWith(t, n, nil, extra...)
}

// startClusterWith is startCluster with flags of each node's own
// (perNode may be nil).
func startClusterWith(t testing.TB, n int, perNode func(id string) []string, extra ...string) *testCluster {
	t.Helper()
	bin := binary(t)
	addrs := freeAddrs(t, 2*n)
	var peers []string
	for i := range n {
		peers = append(peers, fmt.Sprintf("n%d=%s", i+1, addrs[i]))
	}
	dir := t.TempDir()
	c := &testCluster{}
	for i := range n {
		node := &testNode{
			ID: fmt.Sprintf("n%d", i+1), Addr: addrs[i], HTTPAddr: addrs[n+i],
			DataDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			logPath: filepath.Join(dir, fmt.Sprintf("n%d.log", i+1)),
		}
		node.args = append([]string{"serve", "--id", node.ID, "--data-dir", node.DataDir,
			"--addr", node.Addr, "--http-addr", node.HTTPAddr, "--peers", strings.Join(peers, ",")},
			append(append([]string{}, testRaft...), extra...)...)
		if perNode != nil {
			node.args = append(node.args, perNode(node.ID)...)
		}
		c.Nodes = append(c.Nodes, node)
	}
	t.Cleanup(func() {
		for _, node := range c.Nodes {
			node.kill()
		}
		if t.Failed() {
			for _, node := range c.Nodes {
				logs, _ := os.ReadFile(node.logPath)
				t.Logf("---- log of %s ----\n%s", node.ID, logs)
			}
		}
	})
	for _, node := range c.Nodes {
		node.start(t, bin)
	}
	c.waitReady(t)
	return c
}

// start launches the node's process; its output is appended to its log.
func (n *testNode) start(t testing.TB, bin string) {
	t.Helper()
	cmd := exec.Command(bin, n.args...)
	cmd.Env = proc.Environ()
	p, err := proc.Start(cmd, n.logPath)
	if err != nil {
		t.Fatalf("start %s: %v", n.ID, err)
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
}

func (n *testNode) current() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

func (n *testNode) running() bool {
	p := n.current()
	return p != nil && !p.Exited()
}

func (n *testNode) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := n.current().Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", n.ID, err)
	}
}

// waitExit waits for the current process to exit and returns its status.
func (n *testNode) waitExit(t testing.TB, timeout time.Duration) int {
	t.Helper()
	code := n.waitExitCode(timeout)
	if code == -1 {
		t.Fatalf("%s did not exit within %s", n.ID, timeout)
	}
	return code
}

// waitExitCode is waitExit for other goroutines: -1 means it did not exit.
func (n *testNode) waitExitCode(timeout time.Duration) int {
	p := n.current()
	if !p.Wait(timeout) {
		return -1
	}
	return p.ExitCode()
}

// kill ends the process at once if it still runs.
func (n *testNode) kill() {
	if n.running() {
		n.current().Kill(exitTimeout)
	}
}

// opsURL is path on the node's ops port: HTTPS when it serves TLS.
func (n *testNode) opsURL(path string) string {
	if n.tlsCA() != "" {
		return "https://" + n.HTTPAddr + path
	}
	return "http://" + n.HTTPAddr + path
}

// tlsCA is the node's --tls-ca, or "" in plaintext.
func (n *testNode) tlsCA() string {
	for i, a := range n.args {
		if a == "--tls-ca" && i+1 < len(n.args) {
			return n.args[i+1]
		}
	}
	return ""
}

// opsClient reaches the node's ops port, trusting its CA under TLS.
func (n *testNode) opsClient() (*http.Client, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	if ca := n.tlsCA(); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}
	}
	return client, nil
}

func (n *testNode) get(path string) (int, []byte, error) {
	client, err := n.opsClient()
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Get(n.opsURL(path))
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func (n *testNode) ready() bool {
	code, _, err := n.get("/readyz")
	return err == nil && code == http.StatusOK
}

func (n *testNode) status() (ops.Status, error) {
	var st ops.Status
	code, body, err := n.get("/status")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("/status: HTTP %d", code)
	}
	return st, json.Unmarshal(body, &st)
}

func (c *testCluster) waitReady(t testing.TB) {
	t.Helper()
	for _, node := range c.Nodes {
		waitFor(t, readyTimeout, node.ID+" /readyz 200", func() bool {
			if !node.running() {
				t.Fatalf("%s exited while starting", node.ID)
			}
			return node.ready()
		})
	}
}

// leader waits until a running node reports itself leader and returns it.
func (c *testCluster) leader(t testing.TB) *testNode {
	t.Helper()
	var found *testNode
	waitFor(t, readyTimeout, "a leader", func() bool {
		for _, node := range c.Nodes {
			if st, err := node.status(); node.running() && err == nil && st.State == "leader" {
				found = node
				return true
			}
		}
		return false
	})
	return found
}

// follower returns a running node that is not the leader.
func (c *testCluster) follower(t testing.TB) *testNode {
	t.Helper()
	leader := c.leader(t)
	for _, node := range c.Nodes {
		if node != leader && node.running() {
			return node
		}
	}
	t.Fatal("no running follower")
	return nil
}

// cli runs a client command against node.
func (c *testCluster) cli(t testing.TB, node *testNode, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLI(t, stdin, append(args, "--addr", node.Addr)...)
}
