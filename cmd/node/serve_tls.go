package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/raftcron/raftcron/pki"
)

// loadTLS loads the node's certificate, key and CA when the TLS flags are
// set; nil in plaintext.
func loadTLS(cfg serveConfig) (*pki.Bundle, error) {
	if !cfg.hasTLS() {
		return nil, nil
	}
	bundle, err := pki.LoadBundle(pki.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.TLSCA})
	if err != nil {
		return nil, fmt.Errorf("--%s/--%s/--%s: %w", flagTLSCert, flagTLSKey, flagTLSCA, err)
	}
	return bundle, nil
}

// watchHUP reloads the TLS files on every SIGHUP until ctx ends. It is
// installed in plaintext too, where it only says there is nothing to
// reload: a reload signal must never stop a node (SIGHUP's default).
func watchHUP(ctx context.Context, log *slog.Logger, bundle *pki.Bundle) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reloadTLS(log, bundle)
			}
		}
	}()
}

func reloadTLS(log *slog.Logger, bundle *pki.Bundle) {
	if bundle == nil {
		log.Info("SIGHUP: no TLS files to reload (plaintext)")
		return
	}
	if err := bundle.Reload(); err != nil {
		log.Error("SIGHUP: TLS reload failed; keeping the previous certificate and CA", "err", err)
		return
	}
	leaf := bundle.Certificate().Leaf
	log.Info("SIGHUP: reloaded TLS certificate and CA; new connections use them",
		"serial", leaf.SerialNumber.Text(16), "not_after", leaf.NotAfter)
}

// logSecurity says at every start what the port admits; --insecure is a
// warning every time, so that it cannot be forgotten in a unit file.
func logSecurity(log *slog.Logger, cfg serveConfig) {
	if cfg.Insecure {
		log.Warn("--insecure: this node may serve without TLS or client authentication off loopback; " +
			"anyone who reaches --addr can register jobs, run commands and speak Raft")
	}
	if !cfg.hasTLS() {
		log.Info("plaintext on --addr: no TLS, no node identity", "addr", cfg.Addr)
		return
	}
	log.Info("TLS on --addr: Raft and forwarding for node certificates only",
		"addr", cfg.Addr, "verify_clients", cfg.TLSVerifyClients, "acl", cfg.ACL)
}
