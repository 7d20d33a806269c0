//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
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

// node is one raftcron serve process of the scenario's cluster, with the
// scenario's client of it.
type node struct {
	*localcluster.Node

	// mu guards conn.
	mu   sync.Mutex
	conn *grpc.ClientConn
}

// cluster is a set of nodes on one network, with the clients, the status
// poller and the event log of a scenario.
type cluster struct {
	t     testing.TB
	dir   string
	net   network
	bin   string
	lc    *localcluster.Cluster
	nodes []*node
	ids   []string
	polls *poller
	// secretsKey is the --secrets-key-file of the nodes of this build.
	secretsKey string

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

// newCluster starts opts.nodes nodes bootstrapped together on nw and waits
// until all are ready. Cleanup kills them and deletes the network.
func newCluster(t testing.TB, dir string, nw network, opts clusterOptions) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: dir, net: nw, bin: opts.bin, secretsKey: writeSecretsKey(t, dir)}
	lo := localcluster.Options{Binary: opts.bin, Dir: dir, Nodes: opts.nodes, Network: nw,
		NodeArgs: func(n *localcluster.Node) []string {
			// --insecure: in network namespaces the nodes listen on
			// 10.77.0.x, not loopback, and these scenarios exercise the
			// plaintext protocol (TestSecure3 covers TLS and ACLs).
			args := []string{"--insecure"}
			// The previous release predates the secret store.
			if n.Binary() != releaseBinary.path {
				args = append(args, "--secrets-key-file", c.secretsKey)
			}
			return append(append(args, raftFlags...), opts.args...)
		}}
	if opts.env != nil {
		lo.NodeEnv = func(n *localcluster.Node) []string { return opts.env(n.Index, dir) }
	}
	lc, err := localcluster.Launch(lo)
	if err != nil {
		t.Fatalf("start the cluster: %v", err)
	}
	c.lc = lc
	t.Cleanup(c.shutdown)
	for _, n := range lc.Nodes() {
		c.nodes = append(c.nodes, &node{Node: n})
		c.ids = append(c.ids, n.ID)
	}
	c.polls = newPoller(c)
	c.waitReady(c.nodes...)
	return c
}

// writeSecretsKey writes the nodes' --secrets-key-file under dir: the
// base64 of 32 random bytes, as `raftcron secret keygen` writes it.
func writeSecretsKey(t testing.TB, dir string) string {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "secrets.key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitExit waits until n's process exits by itself and returns its exit
// status.
func (c *cluster) waitExit(n *node, timeout time.Duration) int {
	c.t.Helper()
	code, err := n.WaitExit(timeout)
	if err != nil {
		c.t.Fatal(err)
	}
	return code
}

// kill SIGKILLs n and waits for it to exit.
func (c *cluster) kill(n *node) {
	c.t.Helper()
	if _, err := n.Kill(); err != nil {
		c.t.Fatal(err)
	}
}

// crash SIGKILLs every node at once and waits for them to exit.
func (c *cluster) crash() {
	c.t.Helper()
	if err := c.lc.Crash(); err != nil {
		c.t.Fatal(err)
	}
}

// restart starts a node that is down again on its data dir.
func (c *cluster) restart(n *node) {
	c.t.Helper()
	if err := c.lc.Restart(n.ID); err != nil {
		c.t.Fatal(err)
	}
}

// rejoin starts a node that is down, its data dir wiped, joining through
// via.
func (c *cluster) rejoin(n *node, via ...string) {
	c.t.Helper()
	if err := c.lc.Rejoin(n.ID, via...); err != nil {
		c.t.Fatal(err)
	}
}

// pause SIGSTOPs n; resume SIGCONTs it.
func (c *cluster) pause(n *node) {
	c.t.Helper()
	if err := n.Pause(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) resume(n *node) {
	c.t.Helper()
	if err := n.Resume(); err != nil {
		c.t.Fatal(err)
	}
}

// shutdown kills every node, closes the clients and deletes the network.
func (c *cluster) shutdown() {
	if c.polls != nil {
		c.polls.stop()
	}
	if err := c.lc.Crash(); err != nil {
		c.t.Errorf("cluster cleanup: %v", err)
	}
	for _, n := range c.nodes {
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
	conn, err := c.lc.Dial(n.Node)
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

// running lists the nodes whose process runs (not paused, not down).
func (c *cluster) running() []*node {
	var out []*node
	for _, n := range c.nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// waitReady waits until every given node answers /readyz with 200.
func (c *cluster) waitReady(nodes ...*node) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for _, n := range nodes {
		if err := n.WaitReady(ctx); err != nil {
			c.t.Fatal(err)
		}
	}
}

// leader waits until a running node reports itself leader (and no node
// in a newer term says otherwise) and returns it.
func (c *cluster) leader() *node {
	c.t.Helper()
	var found *node
	testutil.WaitFor(c.t, leaderTimeout, "a leader", func() bool {
		found = c.polls.leader()
		return found != nil
	})
	return found
}

// waitNewLeader waits until some node other than old leads.
func (c *cluster) waitNewLeader(old *node) *node {
	c.t.Helper()
	var found *node
	testutil.WaitFor(c.t, leaderTimeout, "a leader other than "+old.ID, func() bool {
		found = c.polls.leader()
		return found != nil && found != old
	})
	return found
}
