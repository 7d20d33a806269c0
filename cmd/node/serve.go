package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/keepalive"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/ops"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// Bounds of the graceful stop; a stuck step must not keep the process alive.
const (
	transferTimeout = 5 * time.Second
	drainTimeout    = 5 * time.Second
	shutdownTimeout = 10 * time.Second
	httpStopTimeout = 2 * time.Second
)

// keepaliveMinTime is the most frequent client ping the server tolerates.
// gRPC's default (5 minutes) makes clients with keepalive fail with
// GOAWAY too_many_pings.
const keepaliveMinTime = 10 * time.Second

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a raftcron node",
		Long: "Run a raftcron node. Every flag also reads RAFTCRON_<FLAG_IN_UPPER_SNAKE>\n" +
			"(RAFTCRON_DATA_DIR) and the --config YAML file (keys are flag names);\n" +
			"flags win over the environment, which wins over the file.\n" +
			"SIGTERM or SIGINT stops the node gracefully.",
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadServeConfig(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// Once the graceful stop has begun, a second signal kills at once.
			go func() {
				<-ctx.Done()
				stop()
			}()
			log, flush := newLogger(cmd.ErrOrStderr(), cfg)
			defer flush()
			return serve(ctx, cfg, log)
		}),
	}
	addServeFlags(cmd.Flags())
	return cmd
}

// newLogger returns the node's logger, writing through a buffer (see
// logBuffer), and the function that flushes it for good when the node
// stops.
func newLogger(w io.Writer, cfg serveConfig) (*slog.Logger, func()) {
	buf := newLogBuffer(w)
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(buf, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(buf, opts)
	}
	return slog.New(flushingHandler{h, buf}), func() { _ = buf.Close() }
}

// server is one running node and everything it serves.
type server struct {
	log   *slog.Logger
	mux   *cluster.Mux
	node  *cluster.Node
	sched *scheduler.Scheduler
	// workers holds the remote workers' streams while this node leads.
	workers *remote.Hub
	grpc    *grpc.Server
	ops     *ops.Server
	// health is the gRPC health service; draining turns it NOT_SERVING.
	health *health.Server
	// hub feeds WatchRuns; closing it ends the watches before draining.
	hub  *api.RunHub
	http *http.Server
}

// serve runs a node until ctx ends (a signal) or a server fails. Both ports
// are bound before Raft starts, so a taken port fails fast and touches no
// state.
func serve(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	mux, err := cluster.Listen(cfg.Addr)
	if err != nil {
		return err
	}
	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		_ = mux.Close()
		return fmt.Errorf("--http-addr %s: %w", cfg.HTTPAddr, listenCause(err))
	}
	memLimit, memLimitSource := applyMemoryLimit(cfg.MemoryLimit)
	s, err := start(cfg, log, mux)
	if err != nil {
		_ = httpLn.Close()
		_ = mux.Close()
		return err
	}

	errc := make(chan error, 2)
	go func() {
		if err := s.grpc.Serve(mux.GRPCListener()); err != nil {
			errc <- fmt.Errorf("grpc server: %w", err)
		}
	}()
	go func() {
		if err := s.http.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("http server on --http-addr %s: %w", cfg.HTTPAddr, err)
		}
	}()
	log.Info("raftcron started", "id", cfg.ID, "addr", cfg.Addr, "http_addr", cfg.HTTPAddr,
		"data_dir", cfg.DataDir, "version", version,
		"memory_limit", formatMemoryLimit(memLimit), "memory_limit_from", memLimitSource)

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("stopping gracefully", "id", cfg.ID)
	case runErr = <-errc:
		log.Error("stopping after a server failed", "id", cfg.ID, "err", runErr)
	case <-s.node.Halted():
		// The node has logged why; exiting non-zero gets it upgraded.
		runErr = s.node.HaltErr()
	}
	s.stop()
	if runErr == nil {
		log.Info("raftcron stopped", "id", cfg.ID)
	}
	return runErr
}

// listenCause shortens the common bind failure to words that name the problem.
func listenCause(err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return errors.New("address already in use")
	}
	return err
}

// Flow-control windows of every connection and stream. Fixed windows turn
// off gRPC's bandwidth-delay estimation, which otherwise pings the client
// after almost every request on a connection that carries one call at a
// time (two extra frames and four syscalls per call, on both sides). 1 MiB
// lets a full ApplyJobs batch arrive without waiting for a window update.
const (
	grpcStreamWindow = 1 << 20
	grpcConnWindow   = 1 << 20
)

// grpcStreamWorkers is how many goroutines serve calls; a call beyond them
// gets its own goroutine, as without workers. Reused goroutines keep the
// stack they grew, instead of growing a fresh one for every call. Writes
// wait for Raft, so a worker is busy for a commit (milliseconds): one per
// expected concurrent call, not one per core.
const grpcStreamWorkers = 128

func newGRPCServer(log *slog.Logger) *grpc.Server {
	return grpc.NewServer(
		grpc.ChainUnaryInterceptor(api.RecoveryInterceptor(log)),
		grpc.ChainStreamInterceptor(api.RecoveryStreamInterceptor(log)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
		grpc.NumStreamWorkers(grpcStreamWorkers),
		grpc.StaticStreamWindowSize(grpcStreamWindow),
		grpc.StaticConnWindowSize(grpcConnWindow),
	)
}

// start opens Raft and wires the services; on error nothing is left running
// except the listeners, which the caller closes.
func start(cfg serveConfig, log *slog.Logger, mux *cluster.Mux) (*server, error) {
	state := fsm.New()
	relay := &leaderRelay{}
	node, err := cluster.New(cluster.Config{
		ID:                 cfg.ID,
		Addr:               cfg.Addr,
		DataDir:            cfg.DataDir,
		Peers:              cfg.Peers,
		Join:               cfg.Join,
		HeartbeatTimeout:   cfg.RaftHeartbeat,
		ElectionTimeout:    cfg.RaftElection,
		LeaderLeaseTimeout: cfg.RaftLease,
		FSM:                state,
		CommandVersion:     fsm.CommandVersion,
		VersionOf:          fsm.VersionOf,
		Logger:             log, // cluster logs leadership changes itself
		OnLeadershipChange: relay.set,
	}, mux)
	if err != nil {
		return nil, err
	}
	workers, err := remote.New(remote.Config{Lease: cfg.WorkerLease, Leading: node.IsLeader, Logger: log})
	if err != nil {
		shutdownNode(log, node)
		return nil, err
	}
	sched, err := scheduler.New(scheduler.Config{
		State:    state,
		Proposer: scheduler.NewNodeProposer(node),
		Executor: dispatch.NewRouter(dispatch.NewHTTPExecutor(nil), dispatch.NewExecExecutor()),
		Remote:   workers,
		Logger:   log,
		NodeID:   cfg.ID,
	})
	if err != nil {
		workers.Close()
		shutdownNode(log, node)
		return nil, err
	}
	hub := api.NewRunHub()
	state.SetObserver(observers{sched, hub})
	relay.attach(sched)
	opsServer, err := ops.New(node, state, version, append(sched.Collectors(), workers.Collectors()...)...)
	if err != nil {
		sched.Stop()
		workers.Close()
		shutdownNode(log, node)
		return nil, fmt.Errorf("ops port: %w", err)
	}
	gs := newGRPCServer(log)
	jobs := api.NewJobServiceWith(api.JobServiceConfig{
		Store: node, Registry: state, Now: time.Now,
		Triggerer: sched, NotLeader: scheduler.ErrNotLeader, Leadership: node,
	})
	healthServer := api.Register(gs, jobs, api.NewClusterService(node, state),
		api.WithRunService(api.NewRunService(node, state, hub)),
		api.WithFenceService(api.NewFenceService(node, state)),
		api.WithWorkerService(api.NewWorkerService(workers, node)))
	cluster.RegisterInternal(gs, node)
	return &server{
		log:     log,
		mux:     mux,
		node:    node,
		sched:   sched,
		workers: workers,
		grpc:    gs,
		ops:     opsServer,
		health:  healthServer,
		hub:     hub,
		http:    &http.Server{Handler: opsServer.Handler(), ReadHeaderTimeout: 10 * time.Second},
	}, nil
}

// stop is the graceful stop: not ready, leadership handed over, gRPC
// drained, Raft shut down, then the ports closed. Every step is bounded.
func (s *server) stop() {
	s.ops.SetDraining()
	s.health.Shutdown()
	if s.node.IsLeader() {
		ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
		to, err := s.node.TransferLeadership(ctx, "")
		cancel()
		if err != nil {
			s.log.Warn("leadership transfer failed; shutting down anyway", "err", err)
		} else {
			s.log.Info("leadership transferred", "to", to.GetId(), "address", to.GetAddress())
		}
	}
	s.sched.Stop()    // cancels in-flight dispatches; fencing covers the rest
	s.workers.Close() // ends the workers' streams, which would hold up the drain
	s.hub.Close()
	drainGRPC(s.grpc, drainTimeout)
	shutdownNode(s.log, s.node)
	ctx, cancel := context.WithTimeout(context.Background(), httpStopTimeout)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		_ = s.http.Close()
	}
	_ = s.mux.Close()
}

// leaderRelay hands leadership changes to the scheduler, which can only be
// built once the node exists, while Raft may report leadership before that.
// The lock orders set and attach, so the scheduler always ends up with the
// latest value; SetLeader never blocks, so calling it under the lock is safe.
type leaderRelay struct {
	mu     sync.Mutex
	sched  *scheduler.Scheduler
	leader bool
}

func (r *leaderRelay) set(isLeader bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leader = isLeader
	if r.sched != nil {
		r.sched.SetLeader(isLeader)
	}
}

func (r *leaderRelay) attach(s *scheduler.Scheduler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sched = s
	s.SetLeader(r.leader)
}

func shutdownNode(log *slog.Logger, node *cluster.Node) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := node.Shutdown(ctx); err != nil {
		log.Warn("raft shutdown", "err", err)
	}
}

// drainGRPC lets in-flight calls finish, up to d, then cuts the rest.
func drainGRPC(gs *grpc.Server, d time.Duration) {
	done := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		gs.Stop()
		<-done
	}
}
