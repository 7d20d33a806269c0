// Package localcluster starts, inspects and stops real `raftcron serve`
// processes on this machine: a cluster's ports (free loopback ones, or
// consecutive ones from a base), data dirs and logs, its TLS material (a
// throwaway CA made with pki), its ACL bootstrap, its leader (as the nodes'
// /status says), and faults on its nodes: kill, pause and resume (SIGSTOP,
// SIGCONT), restart on the same data. `raftcron dev`, the benchmark
// harness, the CLI's tests and the end-to-end tests all run their nodes
// through it; internal/proc starts the processes.
//
// Every node process any cluster starts is registered until it is reaped,
// so that KillAll ends them all however the program ends, and on Linux
// the kernel kills a node whose launcher died (internal/proc).
package localcluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cluster is a set of nodes bootstrapped together with --peers. Its
// methods are safe for concurrent use.
type Cluster struct {
	opts  Options
	net   Network
	loop  *loopback // net, when the cluster runs on loopback; else nil
	nodes []*Node
	ids   []string
	tls   TLSFiles // zero without Options.TLS
	roots *x509.CertPool
	http  *http.Client

	// mu guards token and the node list Add grows.
	mu    sync.Mutex
	token string
}

// Start launches the nodes, waits until every one is ready and, with
// Options.ACL, bootstraps the ACLs. ctx bounds the waits. On error every
// node started is killed.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c, err := Launch(o)
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx); err != nil {
		_ = c.Crash()
		return nil, err
	}
	if o.ACL {
		if _, err := c.BootstrapACL(ctx); err != nil {
			_ = c.Crash()
			return nil, err
		}
	}
	return c, nil
}

// Launch starts the nodes' processes and returns without waiting for
// them: the caller says what it started, then calls WaitReady (and
// BootstrapACL with Options.ACL). On error every node started is killed.
func Launch(o Options) (*Cluster, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, net: o.Network}
	for i := range o.Nodes {
		c.ids = append(c.ids, fmt.Sprintf("n%d", i+1))
	}
	if c.net == nil {
		loop, err := bindLoopback(o.Nodes, o.BasePort, o.Debug)
		if err != nil {
			return nil, err
		}
		defer loop.release()
		c.net, c.loop = loop, loop
	}
	if err := c.setUpTLS(); err != nil {
		return nil, err
	}
	c.http = newOpsClient(c.net, c.roots)
	for i, id := range c.ids {
		c.nodes = append(c.nodes, c.newNode(i, id, "--peers", c.net.Peers(i, c.ids)))
	}
	if c.loop != nil {
		c.loop.release()
	}
	for _, n := range c.nodes {
		if err := n.start(); err != nil {
			_ = c.Crash()
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) setUpTLS() error {
	if !c.opts.TLS {
		return nil
	}
	dir, made := c.opts.TLSDir, false
	if dir == "" {
		dir, made = defaultTLSDir(c.opts.Dir), true
	}
	var err error
	if c.tls, err = tlsFiles(dir, made, c.ids, c.opts.ClientName); err != nil {
		return err
	}
	c.roots, err = c.tls.roots()
	return err
}

func (c *Cluster) newNode(i int, id string, membership ...string) *Node {
	n := &Node{
		ID: id, Index: i, Addr: c.net.Addr(i), HTTPAddr: c.net.HTTPAddr(i),
		DataDir: filepath.Join(c.opts.Dir, id), LogPath: filepath.Join(c.opts.Dir, id+".log"),
		c: c, bin: c.opts.Binary, membership: membership, tls: c.opts.TLS,
	}
	if c.loop != nil {
		n.DebugAddr = c.loop.debugAddr(i)
	}
	return n
}

// args are a node's serve flags, in the order Options describes.
func (c *Cluster) args(n *Node, membership []string) []string {
	args := []string{"serve", "--id", n.ID, "--data-dir", n.DataDir, "--addr", n.Addr, "--http-addr", n.HTTPAddr}
	if n.DebugAddr != "" {
		args = append(args, "--debug-addr", n.DebugAddr)
	}
	args = append(args, membership...)
	if n.tls {
		args = append(args, c.tls.nodeFlags(n.ID)...)
		if c.opts.VerifyClients {
			args = append(args, "--tls-verify-clients")
		}
	}
	if c.opts.ACL {
		args = append(args, "--acl")
	}
	args = append(args, c.opts.Args...)
	if c.opts.NodeArgs != nil {
		args = append(args, c.opts.NodeArgs(n)...)
	}
	return append(args, n.own...)
}

// Nodes are the cluster's nodes, those Add started included.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// Node is the node called id, or nil.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func (c *Cluster) node(id string) (*Node, error) {
	if n := c.Node(id); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("%q: %w", id, ErrNoNode)
}

// TLSFiles says where the cluster's certificates are; the zero value
// without Options.TLS.
func (c *Cluster) TLSFiles() TLSFiles { return c.tls }

// WaitReady waits until every given node (every node not down, if none
// is given) answers /readyz with 200, or ctx ends.
func (c *Cluster) WaitReady(ctx context.Context, nodes ...*Node) error {
	if len(nodes) == 0 {
		for _, n := range c.Nodes() {
			if n.State() != Down {
				nodes = append(nodes, n)
			}
		}
	}
	for _, n := range nodes {
		if err := n.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// CurrentLeader asks the running nodes' /status in turn and returns the
// first that says it leads, or nil. Paused and down nodes are not asked.
func (c *Cluster) CurrentLeader(ctx context.Context) *Node {
	for _, n := range c.Nodes() {
		if !n.Running() {
			continue
		}
		if st, err := n.Status(ctx); err == nil && st.State == "leader" {
			return n
		}
	}
	return nil
}

// Leader waits until a running node says it leads, or ctx ends.
func (c *Cluster) Leader(ctx context.Context) (*Node, error) {
	var found *Node
	err := poll(ctx, "a leader", func() (bool, error) {
		found = c.CurrentLeader(ctx)
		return found != nil, nil
	})
	return found, err
}

// Followers are the running nodes other than leader.
func (c *Cluster) Followers(leader *Node) []*Node {
	var out []*Node
	for _, n := range c.Nodes() {
		if n != leader && n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Kill SIGKILLs node id and waits until it is reaped.
func (c *Cluster) Kill(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	_, err = n.Kill()
	return err
}

// Pause SIGSTOPs node id.
func (c *Cluster) Pause(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return n.Pause()
}

// Resume SIGCONTs node id.
func (c *Cluster) Resume(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return n.Resume()
}

// Restart starts node id again, down, on its data dir with the flags it
// first started with; it does not wait until the node is ready.
func (c *Cluster) Restart(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return n.start()
}

// Rejoin starts node id again, down, with --join via (the addresses of
// running nodes) in place of --peers: a node whose data dir was wiped
// joins afresh. Its later restarts join the same way.
func (c *Cluster) Rejoin(id string, via ...string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.membership = []string{"--join", strings.Join(via, ",")}
	n.mu.Unlock()
	return n.start()
}

// Add starts one more node, called id, on free loopback ports, which joins
// the cluster through via (default: the first node); args are flags of
// its own, after the cluster's. Under TLS its certificate is the TLS
// directory's node-ID.pem, issued by a CA Start made; a directory of the
// caller's that holds none leaves the node's TLS flags to args (a node
// with another CA's certificate). Add does not wait until the node is
// ready: it may never be (an intruder).
func (c *Cluster) Add(id string, via []string, args ...string) (*Node, error) {
	if c.loop == nil {
		return nil, fmt.Errorf("%w: Add needs the loopback network", ErrOptions)
	}
	if c.Node(id) != nil {
		return nil, fmt.Errorf("add %s: %w", id, ErrStillRunning)
	}
	tls := c.opts.TLS
	if tls && c.opts.TLSDir == "" {
		if err := c.tls.issueNode(id); err != nil {
			return nil, err
		}
	} else if tls {
		_, err := os.Stat(c.tls.Node(id).Cert)
		tls = err == nil
	}
	if len(via) == 0 {
		via = []string{c.Nodes()[0].Addr}
	}
	c.mu.Lock()
	i, err := c.loop.add(c.opts.Debug)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	n := c.newNode(i, id, "--join", strings.Join(via, ","))
	n.tls, n.own = tls, args
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	return n, n.start()
}

// Stop ends every node gracefully (SIGTERM, all at once), waits until they
// exit, StopTimeout passes or ctx ends (a second Ctrl-C), then kills the
// stragglers; it reports a node that outlived SIGKILL.
func (c *Cluster) Stop(ctx context.Context) error {
	for _, n := range c.Nodes() {
		if n.State() == Paused {
			_ = n.Resume()
		}
		_ = n.Signal(syscall.SIGTERM)
	}
	timer := time.NewTimer(StopTimeout)
	defer timer.Stop()
wait:
	for _, n := range c.Nodes() {
		p := n.Process()
		if p == nil {
			continue
		}
		select {
		case <-p.Done():
		case <-timer.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	return c.Crash()
}

// Crash SIGKILLs every node at once, as a power cut does, and waits until
// each is reaped.
func (c *Cluster) Crash() error {
	nodes := c.Nodes()
	for _, n := range nodes {
		if p := n.Process(); p != nil {
			_ = p.Signal(syscall.SIGKILL)
		}
	}
	var errs []error
	for _, n := range nodes {
		if _, err := n.Kill(); err != nil {
			errs = append(errs, err)
		}
	}
	c.http.CloseIdleConnections()
	return errors.Join(errs...)
}
