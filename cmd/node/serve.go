package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/server"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a raftcron node",
		Long: "Run a raftcron node. Every flag also reads RAFTCRON_<FLAG_IN_UPPER_SNAKE>\n" +
			"(RAFTCRON_DATA_DIR) and the --config YAML file (keys are flag names);\n" +
			"flags win over the environment, which wins over the file.\n" +
			"SIGTERM or SIGINT stops the node gracefully.",
		Args: cobra.NoArgs,
		RunE: cli.RunE(func(cmd *cobra.Command, _ []string) error {
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

// serve runs a node until ctx ends (a signal) or one of its servers fails.
// server.New binds both ports before Raft starts, so a taken port fails
// fast and touches no state. Errors about the configuration name the flag.
func serve(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	nodeCfg := cfg.Config
	nodeCfg.Logger, nodeCfg.Version = log, version
	bundle, err := loadTLS(cfg)
	if err != nil {
		return err
	}
	if bundle != nil {
		nodeCfg.TLS = &cluster.TLSConfig{Source: bundle, VerifyClients: cfg.TLSVerifyClients}
	}
	debugLn, err := listenDebug(cfg.DebugAddr)
	if err != nil {
		return err
	}
	if debugLn != nil {
		// Webhooks must not reach pprof either.
		nodeCfg.Policy.OwnListeners = append(nodeCfg.Policy.OwnListeners, debugLn.Addr())
	}
	s, err := server.New(nodeCfg)
	if err != nil {
		if debugLn != nil {
			_ = debugLn.Close()
		}
		return flagError(err)
	}
	memLimit, memLimitSource := applyMemoryLimit(cfg.MemoryLimit)
	gcPercent, gcPercentSource := applyGCPercent(memLimit)
	log.Info("memory limit", "memory_limit", formatMemoryLimit(memLimit), "memory_limit_from", memLimitSource,
		"gc_percent", gcPercent, "gc_percent_from", gcPercentSource)
	if err := s.Start(ctx); err != nil {
		if debugLn != nil {
			_ = debugLn.Close()
		}
		return flagError(err)
	}
	watchHUP(ctx, log, bundle)
	debugErr := make(chan error, 1)
	debug := serveDebug(debugLn, debugErr)
	logSecurity(log, cfg)

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("stopping gracefully", "id", cfg.ID)
	case runErr = <-s.Err():
		log.Error("stopping after a server failed", "id", cfg.ID, "err", runErr)
	case runErr = <-debugErr:
		log.Error("stopping after a server failed", "id", cfg.ID, "err", runErr)
	}
	stopDebug(debug)
	_ = s.Stop(context.Background())
	return runErr
}
