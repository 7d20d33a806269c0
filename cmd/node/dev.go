package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/ui"
)

// Raft timings of the demo nodes: short, so that a killed leader is replaced
// within a couple of seconds. Fine on a quiet laptop; serve's defaults are
// the ones for real clusters.
var devRaft = []string{"--raft-heartbeat", "500ms", "--raft-election", "500ms", "--raft-lease", "250ms"}

// Bounds of dev's own waiting; none may keep the demo hanging.
const (
	devReadyTimeout = 30 * time.Second
	devApplyTimeout = 30 * time.Second
	// devStopTimeout covers a node's whole graceful stop (serve bounds each
	// step); past it the stragglers get SIGKILL.
	devStopTimeout = 15 * time.Second
	devKillTimeout = 5 * time.Second
)

// devOptions are the flags of dev.
type devOptions struct {
	nodes    int
	basePort int
	keep     bool
	insecure bool
}

func newDevCmd() *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local demo: a cluster, a fenced downstream and a job every 2 s",
		Long: "Run a local demo on 127.0.0.1: --nodes `raftcron serve` processes in a temporary\n" +
			"data dir, a fenced and de-duplicating downstream (the example ledger) and a job\n" +
			"that calls it every 2 seconds. Prints one line per attempt the downstream\n" +
			"receives and the PID of the leader: kill it and watch another node take over.\n" +
			"The nodes run TLS with a throwaway CA in the data dir, require client\n" +
			"certificates and ACL tokens (--acl); dev bootstraps a management token and\n" +
			"prints the export lines a second terminal needs, the token among them.\n" +
			"--insecure runs them in plaintext without ACLs instead.\n" +
			"Ctrl-C (SIGINT) or SIGTERM stops every node and removes the data dir.",
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			sigc := make(chan os.Signal, 2)
			signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigc)
			return runDev(cmd.Context(), o, sigc, cmd.OutOrStdout())
		}),
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 3, "number of nodes: 3 or 5")
	fs.IntVar(&o.basePort, "base-port", 0, "first of consecutive ports to use: the nodes' gRPC/Raft ports, their HTTP ports, then the downstream's (0: free ports)")
	fs.BoolVar(&o.keep, "keep", false, "keep the data dir (node logs, Raft data, ledger) on exit")
	fs.BoolVar(&o.insecure, flagInsecure, false, "run the nodes in plaintext, without TLS, client certificates or ACL tokens")
	return cmd
}

// ports is how many ports the demo listens on.
func (o *devOptions) ports() int { return 2*o.nodes + 1 }

func (o *devOptions) validate() error {
	if o.nodes != 3 && o.nodes != 5 {
		return usagef("--nodes: must be 3 or 5, got %d", o.nodes)
	}
	if last := o.basePort + o.ports() - 1; o.basePort != 0 && (o.basePort < 1 || last > 65535) {
		return usagef("--base-port: must be 0 (free ports) or leave room for %d ports up to 65535, got %d",
			o.ports(), o.basePort)
	}
	return nil
}

// runDev runs the demo until the first signal, then stops it; a second
// signal skips the graceful stop of the nodes.
func runDev(parent context.Context, o *devOptions, sigc <-chan os.Signal, stdout io.Writer) error {
	out := &devOut{w: stdout}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	hurry := make(chan struct{})
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-sigc:
			cancel()
		case <-finished:
			return
		}
		select {
		case <-sigc:
			close(hurry)
		case <-finished:
		}
	}()

	lns, err := listenDev(o)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "raftcron-dev-")
	if err != nil {
		closeAll(lns)
		return fmt.Errorf("temporary data dir: %w", err)
	}
	d := &demo{opts: o, dir: dir, out: out, hurry: hurry}
	runErr := d.run(ctx, lns)
	stopErr := d.stop()
	if o.keep {
		out.printf("kept %s (node logs, Raft data, ledger)", dir)
	} else if err := os.RemoveAll(dir); err != nil {
		stopErr = errors.Join(stopErr, fmt.Errorf("remove %s: %w", dir, err))
	} else {
		out.printf("removed %s", dir)
	}
	return errors.Join(runErr, stopErr)
}

// demo is one run of dev: the nodes, the downstream and what prints them.
type demo struct {
	opts  *devOptions
	dir   string
	out   *devOut
	hurry <-chan struct{} // closed by a second signal
	nodes []*devNode
	// tls is nil with --insecure.
	tls *devTLS
	// token is the management token's secret; empty with --insecure.
	token string
	down  *downstream
	watch *leaderWatch
}

// run starts everything and reports until ctx ends. A failure to start is
// an error; a node that dies later is only reported: that is the demo.
func (d *demo) run(ctx context.Context, lns []net.Listener) error {
	bin, err := os.Executable()
	if err != nil {
		closeAll(lns)
		return fmt.Errorf("own binary: %w", err)
	}
	d.nodes = newDevNodes(d.dir, lns[:2*d.opts.nodes])
	if !d.opts.insecure {
		if d.tls, err = newDevTLS(d.dir, d.nodes); err != nil {
			closeAll(lns)
			return fmt.Errorf("demo certificates: %w", err)
		}
	}
	d.watch = &leaderWatch{nodes: d.nodes, out: d.out}
	if d.down, err = startDownstream(d.dir, lns[len(lns)-1], d.watch, d.out); err != nil {
		closeAll(lns[:len(lns)-1])
		return err
	}
	// The nodes' ports are handed over to the children; the kernel could
	// give one away in between, which the node then reports as it exits.
	closeAll(lns[:len(lns)-1])
	d.printHeader()
	exits := make(chan *devNode, len(d.nodes))
	for _, n := range d.nodes {
		if err := n.start(bin, peersFlag(d.nodes), exits); err != nil {
			return err
		}
	}
	d.printNodes()
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	if err := d.bootstrapACL(ctx); err != nil {
		return err
	}
	if err := d.applyJob(ctx); err != nil {
		return err
	}
	d.printHints()
	go d.watch.run(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-exits:
			d.reportExit(n)
		}
	}
}

// listenDev binds every port of the demo up front, so that a taken one
// fails before anything starts: the nodes' gRPC ports, their HTTP ports,
// then the downstream's.
func listenDev(o *devOptions) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, o.ports())
	for i := range o.ports() {
		addr := "127.0.0.1:0"
		if o.basePort != 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", o.basePort+i)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			closeAll(lns)
			if o.basePort != 0 {
				return nil, fmt.Errorf("--base-port: %w", cluster.ListenError("", addr, err))
			}
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

func (d *demo) printHeader() {
	d.out.printf("raftcron dev: %d nodes on 127.0.0.1, a fenced demo downstream and a job every 2 s", len(d.nodes))
	keep := "removed on exit; --keep keeps it"
	if d.opts.keep {
		keep = "kept on exit"
	}
	d.out.printf("data dir   %s (%s)", d.dir, keep)
	d.out.printf("downstream %s  (GET / lists every accepted and refused write)", d.down.url())
}

func (d *demo) printNodes() {
	for _, n := range d.nodes {
		d.out.printf("%-3s pid %-7d grpc %-21s http %-29s log %s", n.id, n.proc.Pid(), n.addr, n.opsURL(""), n.logPath)
	}
}

// waitReady waits until every node answers /readyz with 200.
func (d *demo) waitReady(ctx context.Context) error {
	d.out.printf("waiting for the nodes to elect a leader...")
	ctx, cancel := context.WithTimeout(ctx, devReadyTimeout)
	defer cancel()
	for {
		ready := 0
		for _, n := range d.nodes {
			if n.exited() {
				return fmt.Errorf("%s exited while starting: %s%s", n.id, n.proc.ExitReason(), n.lastLog())
			}
			if n.ready(ctx) {
				ready++
			}
		}
		if ready == len(d.nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("the nodes were not ready within %s (--keep keeps their logs)", devReadyTimeout)
			}
			return nil // interrupted: stop quietly
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *demo) printHints() {
	mode := "TLS, client certificates and ACL tokens required"
	if d.tls == nil {
		mode = "plaintext, no ACLs (--insecure)"
	}
	d.out.printf("nodes      %s; in a second terminal:", mode)
	for _, line := range exports(d.nodes[0].addr, d.client().auth) {
		d.out.printf("  %s", line)
	}
	d.out.printf("web UI     %s", d.nodes[0].opsURL(ui.Prefix))
	if d.tls != nil {
		d.out.printf("           (HTTPS with the demo's CA: trust %s, or curl --cacert it;", d.tls.ca.Cert)
		d.out.printf("           sign in with the RAFTCRON_TOKEN above)")
	}
	d.out.printf("try        %s job get demo   (or cluster status)", os.Args[0])
	data := "removes the data dir"
	if d.opts.keep {
		data = "keeps the data dir"
	}
	d.out.printf("Ctrl-C stops every node and %s. One line per attempt the downstream receives:", data)
}

// reportExit tells that a node died; dev keeps going with the others.
func (d *demo) reportExit(n *devNode) {
	line := fmt.Sprintf("%s (pid %d) exited: %s", n.id, n.proc.Pid(), n.proc.ExitReason())
	if d.watch.current() == n {
		line += "; it was the leader: the others elect a new one"
	} else if !n.proc.Killed() {
		line += n.lastLog()
	}
	d.out.eventf("%s", line)
}

// stop ends the nodes (SIGTERM, bounded wait, SIGKILL) and the downstream.
func (d *demo) stop() error {
	if d.watch != nil {
		d.watch.mute()
	}
	var live []string
	for _, n := range d.nodes {
		if !n.exited() {
			live = append(live, n.id)
		}
	}
	var err error
	if len(live) > 0 {
		d.out.printf("stopping %s (SIGTERM; SIGKILL after %s or on a second Ctrl-C)", strings.Join(live, ", "), devStopTimeout)
		err = stopNodes(d.nodes, d.hurry)
	}
	if d.down != nil {
		err = errors.Join(err, d.down.close())
	}
	return err
}

// peersFlag is the --peers value naming every node.
func peersFlag(nodes []*devNode) string {
	peers := make([]string, len(nodes))
	for i, n := range nodes {
		peers[i] = n.id + "=" + n.addr
	}
	return strings.Join(peers, ",")
}

// logPathOf is where a node's output goes.
func logPathOf(dir, id string) string { return filepath.Join(dir, id+".log") }
