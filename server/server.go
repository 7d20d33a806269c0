// Package server wires one raftcron node: the cluster member, the FSM, the
// scheduler and its executors, the gRPC services and the ops port. It is
// the composition root that `raftcron serve`, `raftcron dev` (through
// serve) and the integration tests share; it parses no flags and prints
// nothing but logs.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/raftcron/raftcron/alert"
	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/api/gateway"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/ops"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// Bounds of the graceful stop; a stuck step must not keep the process alive.
const (
	transferTimeout = 5 * time.Second
	drainTimeout    = 5 * time.Second
	shutdownTimeout = 10 * time.Second
	httpStopTimeout = 2 * time.Second
	giveUpTimeout   = 2 * time.Second
)

// ErrStarted: Start was called on a server that was started or stopped
// before.
var ErrStarted = errors.New("server: already started or stopped")

// Server is one node and everything it serves. Its methods are safe for
// concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	mux    *cluster.Mux
	httpLn net.Listener
	// healthLn is the plain-HTTP probe port; nil without HealthAddr.
	healthLn net.Listener
	state    *fsm.FSM
	node     *cluster.Node
	sched    *scheduler.Scheduler
	// alerts checks expectations and sends notifications while leading.
	alerts *alert.Alerter
	// workers holds the remote workers' streams while this node leads.
	workers *remote.Hub
	grpc    *grpc.Server
	ops     *ops.Server
	// health is the gRPC health service; draining turns it NOT_SERVING.
	health *health.Server
	// hub feeds WatchRuns; closing it ends the watches before draining.
	hub  *api.RunHub
	http *http.Server
	// healthHTTP serves healthLn; nil without HealthAddr.
	healthHTTP *http.Server
	// gw is the JSON API's in-process port of the gRPC server.
	gw *gateway.InProcess
	// errc receives the first failure of each listener's server and the
	// node's halt.
	errc chan error
	// stopc is closed when Stop begins; it ends watchHalt.
	stopc chan struct{}
	// leading is signalled (cap 1) when this node starts leading.
	leading chan struct{}
	// aclBootstrap bootstraps ACLs from Config.ACLBootstrapSecret; nil
	// without one.
	aclBootstrap *api.FileBootstrap
	// undo releases what New took, newest first: if New fails part way,
	// and when the server stops without having run.
	undo cleanup

	// mu orders Start and Stop; phase says how far the server got.
	mu    sync.Mutex
	phase phase
}

type phase int

const (
	built   phase = iota // New returned: ports bound, Raft not running
	running              // Start succeeded
	stopped              // Stop ran, or Start failed and cleaned up
)

// New validates cfg, binds both ports (so a taken port fails here, before
// any Raft state is touched), opens the node's storage and wires every
// part. Nothing runs until Start; Stop releases what New took.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withListenerAddr()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{cfg: cfg, log: cfg.Logger, errc: make(chan error, 4), stopc: make(chan struct{}), leading: make(chan struct{}, 1)}
	err := s.listen()
	if err == nil {
		err = s.wire()
	}
	if err != nil {
		s.undo.run(context.Background())
		return nil, err
	}
	return s, nil
}

// listen binds the node's port, the ops port and the probe port.
func (s *Server) listen() error {
	mux, err := s.listenNode()
	if err != nil {
		return err
	}
	s.mux = mux
	s.undo.push(func(context.Context) { _ = mux.Close() })
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return cluster.ListenError(FieldHTTPAddr, s.cfg.HTTPAddr, err)
	}
	s.httpLn = ln
	s.undo.push(func(context.Context) { _ = ln.Close() })
	if err := s.listenHealth(); err != nil {
		return err
	}
	s.mux.SetIsolation(s.cfg.Isolation)
	return nil
}

// listenNode binds the node's port, or takes the caller's listener, in
// plaintext or TLS.
func (s *Server) listenNode() (*cluster.Mux, error) {
	if s.cfg.TLS == nil {
		if s.cfg.Listener != nil {
			return cluster.NewMux(s.cfg.Listener), nil
		}
		return cluster.Listen(s.cfg.Addr)
	}
	tc := *s.cfg.TLS
	if tc.Logger == nil {
		tc.Logger = s.log
	}
	if s.cfg.Listener != nil {
		return cluster.NewMuxTLS(s.cfg.Listener, tc)
	}
	return cluster.ListenTLS(s.cfg.Addr, tc)
}

// wire builds every part, pushing the release of each onto s.undo. The
// cluster node applies nothing before Start, so the scheduler and the run
// hub observe the FSM from its first entry, and leadership reaches a
// scheduler that exists.
func (s *Server) wire() error {
	s.state = fsm.New()
	cc := s.cfg.cluster()
	cc.FSM = s.state
	cc.ClusterVersion = s.state.ClusterVersion
	cc.Logger = s.log // cluster logs leadership changes itself
	cc.OnLeadershipChange = s.leadershipChanged
	node, err := cluster.New(cc, s.mux)
	if err != nil {
		return err
	}
	s.node = node
	s.undo.push(func(ctx context.Context) { s.shutdownNode(node, ctx) })
	pol, err := s.cfg.Policy.withDefaults()
	if err != nil {
		return err
	}
	pol.HTTPDeny = egressFor(pol.HTTPDeny, s.mux.Addr(), s.ownListeners(pol)...)
	s.cfg.Policy = pol
	if err := s.wireScheduler(); err != nil {
		return err
	}
	if err := s.wireAlerts(); err != nil {
		return err
	}
	s.undo.push(func(context.Context) { s.alerts.Stop() })
	hosts, err := ops.NewHosts(s.cfg.HTTPHosts)
	if err != nil {
		return err
	}
	opsServer, err := ops.New(node, s.state, s.cfg.Version, hosts,
		slices.Concat(s.sched.Collectors(), node.Collectors(), s.workers.Collectors(), s.alerts.Collectors())...)
	if err != nil {
		return fmt.Errorf("ops port: %w", err)
	}
	s.ops = opsServer
	s.hub = api.NewRunHubWith(s.cfg.Limits.MaxWatchers)
	s.undo.push(func(context.Context) { s.hub.Close() })
	auth := api.NewAuthorizer(api.AuthConfig{Enabled: s.cfg.ACL, Tokens: s.state, Barrier: node, Now: s.cfg.Now})
	s.state.SetObserver(observers{s.sched, s.hub, auth, s.alerts})
	s.grpc = newGRPCServer(s.log, s.cfg.Limits.maxConcurrentStreams(), auth, s.mux.GRPCServerOptions()...)
	s.undo.push(func(context.Context) { s.grpc.Stop() })
	s.health = s.registerServices()
	if err := s.mountGateway(); err != nil {
		return err
	}
	if err := s.mountUI(auth); err != nil {
		return err
	}
	s.http = s.opsHTTPServer()
	if s.healthLn != nil {
		s.healthHTTP = ops.HTTPServer(opsServer.HealthHandler())
	}
	return nil
}

// ownListeners are the process's listeners besides the node's own port.
func (s *Server) ownListeners(p Policy) []net.Addr {
	addrs := append([]net.Addr{s.httpLn.Addr()}, p.OwnListeners...)
	if s.healthLn != nil {
		addrs = append(addrs, s.healthLn.Addr())
	}
	return addrs
}

// wireScheduler builds the remote workers' hub and the scheduler with the
// executors of the node's policy.
func (s *Server) wireScheduler() error {
	signer := s.cfg.Policy.signer(s.state.ClusterVersion)
	exec := s.cfg.Policy.executor(signer)
	if s.cfg.WrapExecutor != nil {
		exec = s.cfg.WrapExecutor(exec)
	}
	progress := scheduler.NewProgress()
	workers, err := remote.New(remote.Config{
		Lease: s.cfg.WorkerLease, Leading: s.node.IsLeader, Signer: signer, Logger: s.log,
		Progress: progress.Report,
	})
	if err != nil {
		return err
	}
	s.workers = workers
	s.undo.push(func(context.Context) { workers.Close() })
	sched, err := scheduler.New(scheduler.Config{
		State:    s.state,
		Proposer: scheduler.NewNodeProposer(s.node),
		Executor: exec,
		Remote:   workers,
		Progress: progress,
		Clock:    s.cfg.Clock,
		Logger:   s.log,
		NodeID:   s.cfg.ID,

		MaxOpenRuns: s.cfg.Limits.MaxOpenRuns,
		AheadOfWave: collectAheadOfWave,
		Secrets:     s.state,
		SecretKeys:  s.cfg.SecretKeys,
	})
	if err != nil {
		return err
	}
	s.sched = sched
	s.undo.push(func(context.Context) { sched.Stop() })
	return nil
}

// registerServices puts the public API and node-to-node forwarding on the
// gRPC server. Every write service shares one audit switch.
func (s *Server) registerServices() *health.Server {
	deps := api.Deps{
		Store: s.node, Registry: s.state, Ledger: s.state, Tokens: s.state, AuditLog: s.state, Calendars: s.state,
		Cluster: s.node, Counts: s.state, Snapshots: s.node, ScratchDir: s.cfg.DataDir, Live: s.state,
		Workers: s.workers, Leader: s.node,
		Hub: s.hub, Triggerer: s.sched, Leadership: s.node,
		Exec: s.cfg.Policy.Exec, Limits: s.cfg.Limits.jobs(), Audit: s.auditSwitch(),
		ACLBootstrapFromFile: s.cfg.ACLBootstrapSecret != "",
		ClusterVersion:       s.state.ClusterVersion, Now: s.cfg.Now,
		Secrets: s.state, SecretKeys: s.cfg.SecretKeys, Chains: s.state,
		Alerts: s.state, ChannelTester: s.alerts,
	}
	h := api.Register(s.grpc, api.NewServices(deps))
	if s.cfg.ACLBootstrapSecret != "" {
		s.aclBootstrap = api.NewFileBootstrap(deps, s.cfg.ACLBootstrapSecret)
	}
	cluster.RegisterInternal(s.grpc, s.node)
	return h
}

// leadershipChanged is the cluster node's leadership callback: it never
// blocks (SetLeader only signals the scheduler's loop).
func (s *Server) leadershipChanged(isLeader bool) {
	s.sched.SetLeader(isLeader)
	s.alerts.SetLeader(isLeader)
	if isLeader {
		go s.checkSecretKeys()
		select {
		case s.leading <- struct{}{}:
		default:
		}
	}
	if hook := s.cfg.OnLeadershipChange; hook != nil {
		hook(isLeader)
	}
}

// Start starts Raft (which replays the node's state), bootstraps or joins
// if the data dir is new (ctx bounds the join), and serves gRPC and HTTP.
// On error everything is released, as by Stop.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != built {
		return ErrStarted
	}
	if err := s.node.Start(ctx); err != nil {
		s.undo.run(context.Background())
		s.phase = stopped
		return err
	}
	s.phase = running
	go s.serve("grpc server", func() error { return s.grpc.Serve(s.mux.GRPCListener()) })
	go s.serve("json api's grpc server", func() error { return s.grpc.Serve(cluster.LocalListener(s.gw.Listener())) })
	go s.serve("http server on "+s.HTTPAddr(), func() error { return ops.Serve(s.http, s.httpLn) })
	if s.healthHTTP != nil {
		go s.serve("health server on "+s.HealthAddr(), func() error { return s.healthHTTP.Serve(s.healthLn) })
	}
	go s.watchNode()
	go s.checkSecretKeysWhenReady()
	if s.aclBootstrap != nil {
		go s.bootstrapACLs(s.aclBootstrap)
	}
	s.log.Info("raftcron started", "id", s.cfg.ID, "addr", s.cfg.Addr, "http_addr", s.HTTPAddr(),
		"https", s.cfg.TLS != nil, "health_addr", s.HealthAddr(), "data_dir", s.cfg.DataDir, "version", s.cfg.Version, "acl", s.cfg.ACL,
		"secrets_keys", s.cfg.SecretKeys.IDs())
	s.cfg.Policy.log(s.log)
	return nil
}

func (s *Server) serve(what string, run func() error) {
	err := run()
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
		return
	}
	s.fail(fmt.Errorf("%s: %w", what, err))
}

// watchNode reports the node's own failures, after which the process must
// exit: a halt (its FSM cannot apply a committed entry; Raft is down, and
// the node must be upgraded), or a Raft disk write stalled while it leads
// (Raft is stuck in the write, and only a restart lets another node lead).
func (s *Server) watchNode() {
	select {
	case <-s.node.Halted():
		s.fail(s.node.HaltErr())
	case <-s.node.DiskStalled():
		s.fail(s.node.DiskStallErr())
	case <-s.stopc:
	}
}

func (s *Server) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// Err delivers the failure of one of the node's servers, the node's halt
// (an error matching cluster.ErrHalted) or its stalled disk (matching
// cluster.ErrDiskStalled), after which the caller should Stop the server
// and exit non-zero.
func (s *Server) Err() <-chan error { return s.errc }

// Stop is the graceful stop: not ready, leadership handed over, dispatch
// stopped, watches ended, gRPC drained, Raft shut down, then the ports
// closed. ctx bounds the courtesies (the handover and the drain, each also
// bounded by its own timeout); Raft and the ports are always shut down,
// except on a node whose disk stalled (see giveUp). Stop after Stop does
// nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.phase {
	case stopped:
		return nil
	case built:
		s.undo.run(ctx)
		s.phase = stopped
		return nil
	}
	s.phase = stopped
	close(s.stopc)
	s.ops.SetDraining()
	s.health.Shutdown()
	if s.node.DiskStallErr() != nil {
		s.giveUp()
		return nil
	}
	s.handOver(ctx)
	s.sched.Stop()    // cancels in-flight dispatches; fencing covers the rest
	s.alerts.Stop()   // what it leaves unacknowledged, the next leader sends
	s.workers.Close() // ends the workers' streams, which would hold up the drain
	s.hub.Close()
	drainGRPC(s.grpc, drainTimeout, ctx.Done())
	_ = s.gw.Close()
	s.shutdownNode(s.node, ctx)
	hctx, cancel := context.WithTimeout(ctx, httpStopTimeout)
	defer cancel()
	for _, srv := range []*http.Server{s.http, s.healthHTTP} {
		if srv != nil && srv.Shutdown(hctx) != nil {
			_ = srv.Close()
		}
	}
	_ = s.mux.Close()
	s.log.Info("raftcron stopped", "id", s.cfg.ID)
	return nil
}

// giveUp is all of Stop that a node whose disk stalled can do: Raft is
// stuck in the write, so whatever waits on it (the handover, the drain of
// calls that propose, Raft's own shutdown) would hang. Dispatch stops, for
// a bounded time, and the process exit does the rest.
func (s *Server) giveUp() {
	stopped := make(chan struct{})
	go func() {
		s.sched.Stop() // cancels in-flight dispatches
		s.workers.Close()
		close(stopped)
	}()
	t := time.NewTimer(giveUpTimeout)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		s.log.Warn("the scheduler did not stop in time; exiting anyway", "after", giveUpTimeout)
	}
	s.log.Error("raftcron gave up: its Raft disk write stalled", "id", s.cfg.ID)
}

// handOver transfers leadership if this node leads, so that the cluster
// fails over in a round trip instead of an election timeout.
func (s *Server) handOver(ctx context.Context) {
	if !s.node.IsLeader() {
		return
	}
	tctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	to, err := s.node.TransferLeadership(tctx, "")
	if err != nil {
		s.log.Warn("leadership transfer failed; shutting down anyway", "err", err)
		return
	}
	s.log.Info("leadership transferred", "to", to.GetId(), "address", to.GetAddress())
}

func (s *Server) shutdownNode(node *cluster.Node, ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
	defer cancel()
	if err := node.Shutdown(ctx); err != nil {
		s.log.Warn("raft shutdown", "err", err)
	}
}

// Addr is the node's advertised address (Raft and gRPC).
func (s *Server) Addr() string { return s.cfg.Addr }

// HTTPAddr is the bound address of the ops port.
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

// Node is the node's cluster member; call its methods only between Start
// and Stop.
func (s *Server) Node() *cluster.Node { return s.node }

// FSM is the node's replicated state (read it; only Raft writes it).
func (s *Server) FSM() *fsm.FSM { return s.state }

// Scheduler is the node's leader-only fire loop.
func (s *Server) Scheduler() *scheduler.Scheduler { return s.sched }

// Ready is what /readyz answers: a known leader, the log applied up to the
// commit index, and no stop begun.
func (s *Server) Ready() bool { return s.ops.Ready() }
