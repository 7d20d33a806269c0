// Package devcluster is `raftcron dev`: a local demo of a cluster, a fenced
// downstream (package ledger) and a job every 2 seconds, which prints every
// attempt the downstream receives and every new leader, with the command
// that kills it. Its nodes are real `raftcron serve` processes started by
// localcluster, with TLS, client certificates and ACLs unless --insecure.
package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/ledger"
	"github.com/raftcron/raftcron/localcluster"
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
)

// devClientName is the common name of the demo's client certificate.
const devClientName = "dev"

// devOptions are the flags of dev.
type devOptions struct {
	nodes    int
	basePort int
	keep     bool
	insecure bool
}

// NewCommand is `raftcron dev`.
func NewCommand() *cobra.Command {
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
		RunE: cli.RunE(func(cmd *cobra.Command, _ []string) error {
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
	fs.BoolVar(&o.insecure, "insecure", false, "run the nodes in plaintext, without TLS, client certificates or ACL tokens")
	return cmd
}

// ports is how many ports the demo listens on.
func (o *devOptions) ports() int { return 2*o.nodes + 1 }

func (o *devOptions) validate() error {
	if o.nodes != 3 && o.nodes != 5 {
		return cli.Usagef("--nodes: must be 3 or 5, got %d", o.nodes)
	}
	if last := o.basePort + o.ports() - 1; o.basePort != 0 && (o.basePort < 1 || last > 65535) {
		return cli.Usagef("--base-port: must be 0 (free ports) or leave room for %d ports up to 65535, got %d",
			o.ports(), o.basePort)
	}
	return nil
}

// cluster is what the demo's nodes are: localcluster's options for them,
// signing with the key in keyFile.
func (o *devOptions) cluster(bin, dir, keyFile string) localcluster.Options {
	args := append(slices.Clone(devRaft), "--fence-key-file", keyFile)
	lo := localcluster.Options{Binary: bin, Dir: dir, Nodes: o.nodes, BasePort: o.basePort, Args: args}
	if !o.insecure {
		// The secure setup of DESIGN §11 end to end.
		lo.TLS, lo.VerifyClients, lo.ACL, lo.ClientName = true, true, true, devClientName
	}
	return lo
}

// runDev runs the demo until the first signal, then stops it; a second
// signal skips the graceful stop of the nodes.
func runDev(parent context.Context, o *devOptions, sigc <-chan os.Signal, stdout io.Writer) error {
	out := &devOut{w: stdout}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	hurry, rush := context.WithCancel(context.Background())
	defer rush()
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
			rush()
		case <-finished:
		}
	}()

	// The downstream's port first: a taken one fails before anything
	// else exists. The cluster binds the nodes' ports before it starts any.
	ln, err := listenDownstream(o)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "raftcron-dev-")
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("temporary data dir: %w", err)
	}
	d := &demo{opts: o, dir: dir, out: out}
	runErr := d.run(ctx, ln)
	stopErr := d.stop(hurry)
	switch {
	case d.cluster == nil:
		_ = os.RemoveAll(dir) // no node started: nothing to keep or to tell
	case o.keep:
		out.printf("kept %s (node logs, Raft data, ledger)", dir)
	default:
		if err := os.RemoveAll(dir); err != nil {
			stopErr = errors.Join(stopErr, fmt.Errorf("remove %s: %w", dir, err))
		} else {
			out.printf("removed %s", dir)
		}
	}
	return errors.Join(runErr, stopErr)
}

// listenDownstream binds the downstream's port: the one after the nodes'
// with --base-port.
func listenDownstream(o *devOptions) (net.Listener, error) {
	addr := "127.0.0.1:0"
	if o.basePort != 0 {
		addr = fmt.Sprintf("127.0.0.1:%d", o.basePort+o.ports()-1)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if o.basePort != 0 {
			return nil, fmt.Errorf("--base-port: %w", err)
		}
		return nil, fmt.Errorf("pick a free port: %w", err)
	}
	return ln, nil
}

// demo is one run of dev: the nodes, the downstream and what prints them.
type demo struct {
	opts    *devOptions
	dir     string
	out     *devOut
	cluster *localcluster.Cluster
	down    *downstream
	watch   *leaderWatch
}

// run starts everything and reports until ctx ends. A failure to start is
// an error; a node that dies later is only reported: that is the demo.
func (d *demo) run(ctx context.Context, ln net.Listener) error {
	bin, err := os.Executable()
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("own binary: %w", err)
	}
	keyFile, verifier, err := makeFenceKey(d.dir)
	if err != nil {
		_ = ln.Close()
		return err
	}
	d.watch = &leaderWatch{out: d.out}
	if d.down, err = startDownstream(d.dir, ln, d.watch, d.out, ledger.WithVerifier(verifier)); err != nil {
		return err
	}
	d.printHeader()
	d.cluster, err = localcluster.Launch(d.opts.cluster(bin, d.dir, keyFile))
	if err != nil {
		if d.opts.basePort != 0 && errors.Is(err, localcluster.ErrPortTaken) {
			return fmt.Errorf("--base-port: %w", err)
		}
		return err
	}
	d.watch.watch(d.cluster)
	exits := make(chan *localcluster.Node, d.opts.nodes)
	for _, n := range d.cluster.Nodes() {
		go func() {
			<-n.Process().Done()
			exits <- n
		}()
	}
	d.printNodes()
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	if err := d.bootstrapACL(ctx); err != nil {
		return err
	}
	if err := d.waitSigningV2(ctx); err != nil {
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

func (d *demo) printHeader() {
	d.out.printf("raftcron dev: %d nodes on 127.0.0.1, a fenced demo downstream and a job every 2 s", d.opts.nodes)
	keep := "removed on exit; --keep keeps it"
	if d.opts.keep {
		keep = "kept on exit"
	}
	d.out.printf("data dir   %s (%s)", d.dir, keep)
	d.out.printf("downstream %s  (GET / lists every accepted and refused write)", d.down.url())
	d.out.printf("           verifies the nodes' signatures (v2, key %s)", filepath.Join(d.dir, fenceKeyFile))
}

func (d *demo) printNodes() {
	for _, n := range d.cluster.Nodes() {
		d.out.printf("%-3s pid %-7d grpc %-21s http %-29s log %s", n.ID, n.Process().Pid(), n.Addr, n.OpsURL(""), n.LogPath)
	}
}

// waitReady waits until every node answers /readyz with 200.
func (d *demo) waitReady(ctx context.Context) error {
	d.out.printf("waiting for the nodes to elect a leader...")
	waitCtx, cancel := context.WithTimeout(ctx, devReadyTimeout)
	defer cancel()
	err := d.cluster.WaitReady(waitCtx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return nil // interrupted: stop quietly
	case waitCtx.Err() != nil:
		return fmt.Errorf("the nodes were not ready within %s (--keep keeps their logs)", devReadyTimeout)
	default:
		return err
	}
}

// client is how dev calls the nodes, and how a second terminal does:
// through every node's address in turn, so that it outlives any of them,
// with the demo's certificates and token unless --insecure.
func (d *demo) client() cli.Target {
	var addrs []string
	for _, n := range d.cluster.Nodes() {
		addrs = append(addrs, n.Addr)
	}
	t := cli.Target{Addr: strings.Join(addrs, ","), Timeout: devApplyTimeout}
	if f := d.cluster.TLSFiles(); f.CA != "" {
		t.Auth = cli.Auth{CACert: f.CA, ClientCert: f.ClientCert, ClientKey: f.ClientKey, Token: d.cluster.Token()}
	}
	return t
}

func (d *demo) printHints() {
	mode := "TLS, client certificates and ACL tokens required"
	if d.opts.insecure {
		mode = "plaintext, no ACLs (--insecure)"
	}
	d.out.printf("nodes      %s; in a second terminal:", mode)
	for _, line := range d.client().Exports() {
		d.out.printf("  %s", line)
	}
	for i, n := range d.cluster.Nodes() {
		label := ""
		if i == 0 {
			label = "web UI"
		}
		d.out.printf("%-10s %-3s %s", label, n.ID, n.OpsURL(ui.Prefix))
	}
	if ca := d.cluster.TLSFiles().CA; ca != "" {
		d.out.printf("           (HTTPS with the demo's CA: trust %s, or curl --cacert it;", ca)
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
func (d *demo) reportExit(n *localcluster.Node) {
	p := n.Process()
	line := fmt.Sprintf("%s (pid %d) exited: %s", n.ID, p.Pid(), p.ExitReason())
	if d.watch.current() == n {
		line += "; it was the leader: the others elect a new one"
	} else if last := n.LastLog(); !p.Killed() && last != "" {
		line += "; last log line: " + last
	}
	d.out.eventf("%s", line)
}

// stop ends the nodes (SIGTERM, bounded wait cut short when hurry ends,
// SIGKILL) and the downstream.
func (d *demo) stop(hurry context.Context) error {
	if d.watch != nil {
		d.watch.mute()
	}
	var err error
	if d.cluster != nil {
		var live []string
		for _, n := range d.cluster.Nodes() {
			if n.State() != localcluster.Down {
				live = append(live, n.ID)
			}
		}
		if len(live) > 0 {
			d.out.printf("stopping %s (SIGTERM; SIGKILL after %s or on a second Ctrl-C)", strings.Join(live, ", "), localcluster.StopTimeout)
		}
		err = d.cluster.Stop(hurry)
	}
	if d.down != nil {
		err = errors.Join(err, d.down.close())
	}
	return err
}
