//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/internal/proc"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Raft timings of the scenarios: short, so failovers take about a second.
var raftFlags = []string{"--raft-heartbeat", "500ms", "--raft-election", "500ms", "--raft-lease", "500ms"}

// electionTimeout is the longest a pause may last without a new election.
const electionTimeout = 500 * time.Millisecond

// Deadlines of the harness: generous for a loaded 2-core machine.
const (
	readyTimeout  = 30 * time.Second
	exitTimeout   = 10 * time.Second
	leaderTimeout = 20 * time.Second
)

// procState is where a node's process stands.
type procState int

const (
	procDown    procState = iota // never started, or exited
	procRunning                  // running
	procStopped                  // SIGSTOPped
)

// node is one raftcron serve process, restartable on its data dir.
type node struct {
	ID      string
	idx     int
	DataDir string
	logPath string
	env     []string // extra environment (failpoints)
	// bin, when set, is the binary n runs instead of the cluster's (a
	// rolling upgrade replaces it node by node).
	bin string

	// mu guards proc, state and conn.
	mu    sync.Mutex
	proc  *proc.Process
	state procState
	conn  *grpc.ClientConn
}

// cluster is a set of nodes on one network, with the clients, the status
// poller and the event log of a scenario.
type cluster struct {
	t     testing.TB
	dir   string
	net   network
	bin   string
	nodes []*node
	ids   []string
	polls *poller
	args  []string // more serve flags

	// mu guards events.
	mu     sync.Mutex
	events []Event
}

// clusterOptions shape a cluster.
type clusterOptions struct {
	nodes int
	bin   string
	// env returns extra environment for node i (failpoints), or nil.
	env func(i int, dir string) []string
	// args are more flags of every node's serve.
	args []string
}

// newCluster starts opts.nodes nodes bootstrapped together and waits until
// all are ready. Cleanup kills them and deletes the network.
func newCluster(t testing.TB, dir string, nw network, opts clusterOptions) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: dir, net: nw, bin: opts.bin, args: opts.args}
	for i := range opts.nodes {
		c.ids = append(c.ids, fmt.Sprintf("n%d", i+1))
	}
	for i, id := range c.ids {
		n := &node{ID: id, idx: i, DataDir: filepath.Join(dir, id), logPath: filepath.Join(dir, id+".log")}
		if opts.env != nil {
			n.env = opts.env(i, dir)
		}
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(c.shutdown)
	for _, n := range c.nodes {
		c.start(n, "--peers", nw.Peers(n.idx, c.ids))
	}
	c.polls = newPoller(c)
	c.waitReady(c.nodes...)
	return c
}

// start launches n's process with the membership flags given (--peers or
// --join); its output is appended to its log, and it dies with the test
// process, whatever ends it.
func (c *cluster) start(n *node, membership ...string) {
	c.t.Helper()
	bin := c.bin
	if n.bin != "" {
		bin = n.bin
	}
	args := append([]string{"serve", "--id", n.ID, "--data-dir", n.DataDir,
		"--addr", c.net.Addr(n.idx), "--http-addr", c.net.HTTPAddr(n.idx)}, membership...)
	// --insecure: in network namespaces the nodes listen on 10.77.0.x, not
	// loopback, and these scenarios exercise the plaintext protocol
	// (TestSecure3 covers TLS and ACLs). The previous release predates the flag.
	if bin != releaseBinary.path {
		args = append(args, "--insecure")
	}
	args = append(append(args, raftFlags...), c.args...)
	header := fmt.Sprintf("---- %s start: %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "))
	if err := appendFile(n.logPath, header); err != nil {
		c.t.Fatal(err)
	}
	cmd := c.net.Command(n.idx, bin, args...)
	cmd.Env = append(proc.Environ(), n.env...)
	p, err := proc.Start(cmd, n.logPath)
	if err != nil {
		c.t.Fatalf("start %s: %v", n.ID, err)
	}
	n.mu.Lock()
	n.proc, n.state = p, procRunning
	n.mu.Unlock()
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pid is the process ID of n's running process, 0 if it is down.
func (n *node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.Exited() {
		return 0
	}
	return n.proc.Pid()
}

// waitExit waits until n's process exits by itself and returns its exit
// status.
func (c *cluster) waitExit(n *node, timeout time.Duration) int {
	c.t.Helper()
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil {
		c.t.Fatalf("%s was never started", n.ID)
	}
	if !p.Wait(timeout) {
		c.t.Fatalf("%s did not exit within %s", n.ID, timeout)
	}
	return p.ExitCode()
}

func (n *node) procState() procState {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.Exited() {
		return procDown
	}
	return n.state
}

// signal sends sig to n's process if it runs.
func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.Exited() {
		return
	}
	_ = n.proc.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		n.state = procStopped
	case syscall.SIGCONT:
		n.state = procRunning
	}
}

// kill SIGKILLs n and waits for it to exit.
func (c *cluster) kill(n *node) {
	c.t.Helper()
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil {
		return
	}
	n.signal(syscall.SIGKILL)
	if !p.Wait(exitTimeout) {
		c.t.Fatalf("%s did not exit within %s of SIGKILL", n.ID, exitTimeout)
	}
}

// restart starts a node that is down again on its data dir.
func (c *cluster) restart(n *node) {
	c.t.Helper()
	if n.procState() != procDown {
		c.t.Fatalf("restart %s: it is still running", n.ID)
	}
	c.start(n, "--peers", c.net.Peers(n.idx, c.ids))
}

// shutdown kills every node, closes the clients and deletes the network.
func (c *cluster) shutdown() {
	if c.polls != nil {
		c.polls.stop()
	}
	for _, n := range c.nodes {
		if n.procState() == procStopped {
			n.signal(syscall.SIGCONT)
		}
		c.kill(n)
		n.mu.Lock()
		if n.conn != nil {
			_ = n.conn.Close()
			n.conn = nil
		}
		n.mu.Unlock()
	}
	if err := c.net.Close(); err != nil {
		c.t.Errorf("network cleanup: %v", err)
	}
}

// event records something the harness did, and logs it.
func (c *cluster) event(kind string, nodes []*node, detail string) {
	e := Event{At: time.Now(), Kind: kind, Detail: detail}
	for _, n := range nodes {
		e.Nodes = append(e.Nodes, n.ID)
	}
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	c.t.Logf("%s %s %v %s", e.At.UTC().Format("15:04:05.000"), kind, e.Nodes, detail)
}

func (c *cluster) eventLog() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// client returns a gRPC connection to n (made once, reconnecting by
// itself).
func (c *cluster) client(n *node) *grpc.ClientConn {
	c.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn != nil {
		return n.conn
	}
	conn, err := grpc.NewClient("passthrough:///"+c.net.Addr(n.idx),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return c.net.Dial(ctx, "tcp", addr)
		}))
	if err != nil {
		c.t.Fatalf("grpc client for %s: %v", n.ID, err)
	}
	n.conn = conn
	return conn
}

func (c *cluster) jobs(n *node) pb.JobServiceClient { return pb.NewJobServiceClient(c.client(n)) }
func (c *cluster) admin(n *node) pb.ClusterServiceClient {
	return pb.NewClusterServiceClient(c.client(n))
}
func (c *cluster) runsClient(n *node) pb.RunServiceClient { return pb.NewRunServiceClient(c.client(n)) }
func (c *cluster) node(id string) *node {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// running lists the nodes whose process runs (not stopped, not down).
func (c *cluster) running() []*node {
	var out []*node
	for _, n := range c.nodes {
		if n.procState() == procRunning {
			out = append(out, n)
		}
	}
	return out
}

// waitReady waits until every given node answers /readyz with 200.
func (c *cluster) waitReady(nodes ...*node) {
	c.t.Helper()
	for _, n := range nodes {
		waitUntil(c.t, readyTimeout, n.ID+" ready", func() bool {
			if n.procState() == procDown {
				c.t.Fatalf("%s exited while starting; see %s", n.ID, n.logPath)
			}
			return c.polls.ready(n)
		})
	}
}

// leader waits until a running node reports itself leader (and no node
// in a newer term says otherwise) and returns it.
func (c *cluster) leader() *node {
	c.t.Helper()
	var found *node
	waitUntil(c.t, leaderTimeout, "a leader", func() bool {
		found = c.polls.leader()
		return found != nil
	})
	return found
}

// waitNewLeader waits until some node other than old leads.
func (c *cluster) waitNewLeader(old *node) *node {
	c.t.Helper()
	var found *node
	waitUntil(c.t, leaderTimeout, "a leader other than "+old.ID, func() bool {
		found = c.polls.leader()
		return found != nil && found != old
	})
	return found
}

// waitUntil polls cond every 20 ms until it holds or the deadline passes.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
