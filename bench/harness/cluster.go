// Package harness runs the benchmark scenarios' moving parts: a cluster of
// real `raftcron serve` processes on loopback, a webhook sink that records
// what the cluster delivers, gRPC load generators, and readers for /proc,
// /metrics and the Raft log. Every process it starts is registered, so one
// call (KillAll) ends them all, whatever went wrong.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/ops"
)

// Bounds of the cluster's waits; generous for a loaded 2-core box.
const (
	ReadyTimeout = 60 * time.Second
	exitTimeout  = 20 * time.Second
	pollEvery    = 20 * time.Millisecond
	httpTimeout  = 2 * time.Second
)

// ErrTimeout is returned by every bounded wait that ran out.
var ErrTimeout = errors.New("timed out")

// ClusterOptions describes a cluster to start.
type ClusterOptions struct {
	// Bin is the raftcron binary.
	Bin string
	// Dir holds the nodes' data dirs and logs; it must exist.
	Dir string
	// Nodes is the cluster size; 0 means 3.
	Nodes int
	// Extra are added to every node's serve flags (e.g. --raft-heartbeat 500ms).
	Extra []string
	// LogLevel of the nodes; empty means info.
	LogLevel string
}

// Cluster is a set of nodes bootstrapped together with --peers.
type Cluster struct {
	Nodes []*Node
}

// Node is one `raftcron serve` process, restartable on the same ports and
// data dir.
type Node struct {
	ID, Addr, HTTPAddr, DataDir, LogPath string
	// DebugAddr serves /debug/pprof/ (serve --debug-addr).
	DebugAddr string
	bin       string
	args      []string

	// mu guards proc and startedAt, which change on every (re)start.
	mu        sync.Mutex
	proc      *proc.Process
	startedAt time.Time
}

// StartCluster starts the nodes and waits until every one is ready. On error
// every node started so far is killed.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	n := o.Nodes
	if n == 0 {
		n = 3
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	addrs, err := FreeAddrs(3 * n)
	if err != nil {
		return nil, err
	}
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("n%d=%s", i+1, addrs[i])
	}
	c := &Cluster{}
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		node := &Node{
			ID: id, Addr: addrs[i], HTTPAddr: addrs[n+i], DebugAddr: addrs[2*n+i],
			DataDir: filepath.Join(o.Dir, id),
			LogPath: filepath.Join(o.Dir, id+".log"),
			bin:     o.Bin,
		}
		node.args = append([]string{"serve", "--id", id, "--data-dir", node.DataDir,
			"--addr", node.Addr, "--http-addr", node.HTTPAddr, "--debug-addr", node.DebugAddr, "--peers", strings.Join(peers, ","),
			"--log-level", o.LogLevel}, o.Extra...)
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		if err := node.Start(); err != nil {
			c.Kill()
			return nil, err
		}
	}
	if err := c.WaitReady(ctx, ReadyTimeout); err != nil {
		c.Kill()
		return nil, err
	}
	return c, nil
}

// FreeAddrs picks n distinct free loopback ports.
func FreeAddrs(n int) ([]string, error) {
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
			return nil, err
		}
		lns = append(lns, ln)
		addrs[i] = ln.Addr().String()
	}
	return addrs, nil
}

// Kill ends every node at once (SIGKILL) and waits for them.
func (c *Cluster) Kill() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// WaitReady waits until every running node answers /readyz with 200.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		if err := Poll(ctx, timeout, n.ID+" ready", func() (bool, error) {
			if !n.Running() {
				return false, fmt.Errorf("%s exited while starting (log: %s)", n.ID, n.LogPath)
			}
			return n.Ready(), nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// Leader waits until a running node reports itself leader.
func (c *Cluster) Leader(ctx context.Context, timeout time.Duration) (*Node, error) {
	var found *Node
	err := Poll(ctx, timeout, "a leader", func() (bool, error) {
		found = c.CurrentLeader()
		return found != nil, nil
	})
	return found, err
}

// CurrentLeader is the running node that says it leads, or nil.
func (c *Cluster) CurrentLeader() *Node {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		if st, err := n.Status(); err == nil && st.State == "leader" {
			return n
		}
	}
	return nil
}

// Followers are the running nodes other than leader.
func (c *Cluster) Followers(leader *Node) []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n != leader && n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// WaitCaughtUp waits until every running node has applied up to index.
func (c *Cluster) WaitCaughtUp(ctx context.Context, index uint64, timeout time.Duration) error {
	return Poll(ctx, timeout, fmt.Sprintf("every node applied index %d", index), func() (bool, error) {
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			st, err := n.Status()
			if err != nil || st.AppliedIndex < index {
				return false, nil
			}
		}
		return true, nil
	})
}

// Start launches the node's process; its output is appended to its log.
// If this process dies without cleaning up, the kernel kills the node too.
func (n *Node) Start() error {
	cmd := exec.Command(n.bin, n.args...)
	cmd.Env = proc.Environ()
	start := time.Now()
	p, err := startTracked(cmd, n.LogPath)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.ID, err)
	}
	n.mu.Lock()
	n.proc, n.startedAt = p, start
	n.mu.Unlock()
	return nil
}

// StartedAt is when the current process was started.
func (n *Node) StartedAt() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startedAt
}

func (n *Node) current() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Pid of the current process, 0 if none.
func (n *Node) Pid() int {
	if p := n.current(); p != nil {
		return p.Pid()
	}
	return 0
}

// Running reports whether the current process has not exited.
func (n *Node) Running() bool {
	p := n.current()
	return p != nil && !p.Exited()
}

// Kill sends SIGKILL and waits until the process is reaped; it returns the
// time the signal was sent (zero if the node was not running).
func (n *Node) Kill() time.Time {
	return n.signalAndWait(syscall.SIGKILL)
}

// Stop asks the node to stop gracefully (SIGTERM) and waits for it; a node
// that does not exit in time is killed.
func (n *Node) Stop() {
	n.signalAndWait(syscall.SIGTERM)
	if n.Running() {
		n.Kill()
	}
}

func (n *Node) signalAndWait(sig syscall.Signal) time.Time {
	if !n.Running() {
		return time.Time{}
	}
	p := n.current()
	at := time.Now()
	_ = p.Signal(sig)
	p.Wait(exitTimeout)
	return at
}

func (n *Node) get(path string) (int, []byte, error) {
	client := http.Client{Timeout: httpTimeout}
	resp, err := client.Get("http://" + n.HTTPAddr + path)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Ready reports whether /readyz answers 200.
func (n *Node) Ready() bool {
	code, _, err := n.get("/readyz")
	return err == nil && code == http.StatusOK
}

// Status reads /status.
func (n *Node) Status() (ops.Status, error) {
	var st ops.Status
	code, body, err := n.get("/status")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("%s /status: HTTP %d", n.ID, code)
	}
	return st, json.Unmarshal(body, &st)
}

// Metrics scrapes /metrics.
func (n *Node) Metrics() (Metrics, error) {
	code, body, err := n.get("/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: HTTP %d", n.ID, code)
	}
	return ParseMetrics(string(body)), nil
}

// WaitReady waits for /readyz 200 and returns how long after the process
// start it came.
func (n *Node) WaitReady(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	err := Poll(ctx, timeout, n.ID+" ready", func() (bool, error) {
		if !n.Running() {
			return false, fmt.Errorf("%s exited (log: %s)", n.ID, n.LogPath)
		}
		return n.Ready(), nil
	})
	return time.Since(n.StartedAt()), err
}

// Poll calls cond every pollEvery until it holds, fails, ctx ends or
// timeout passes.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s waiting for %s", ErrTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}
