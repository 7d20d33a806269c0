package server

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/ops"
)

// opsTLSConfig is the ops port's HTTPS configuration under TLS: the node's
// current certificate on every handshake (so a SIGHUP reload applies to the
// next connection), TLS 1.2 or later, and no client certificate asked for:
// HTTP callers (browsers, curl, Prometheus) prove who they are with bearer
// tokens, which TLS keeps off the wire.
func opsTLSConfig(src cluster.TLSSource) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return src.Certificate(), nil
		},
	}
}

// opsHTTPServer is the ops port's server: HTTPS with the node's
// certificate when the node port speaks TLS, plain HTTP otherwise.
func (s *Server) opsHTTPServer() *http.Server {
	srv := ops.HTTPServer(s.ops.Handler())
	// A plain-HTTP caller's failed handshake is the caller's mistake, not
	// the node's: the node's debug log, not the process's stderr.
	srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	if s.cfg.TLS != nil {
		srv.TLSConfig = opsTLSConfig(s.cfg.TLS.Source)
	}
	return srv
}

// listenHealth binds the plain-HTTP probe port when HealthAddr is set.
func (s *Server) listenHealth() error {
	if s.cfg.HealthAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.HealthAddr)
	if err != nil {
		return cluster.ListenError(FieldHealthAddr, s.cfg.HealthAddr, err)
	}
	s.healthLn = ln
	s.undo.push(func(context.Context) { _ = ln.Close() })
	return nil
}

// HealthAddr is the bound address of the probe port; empty when
// Config.HealthAddr is not set.
func (s *Server) HealthAddr() string {
	if s.healthLn == nil {
		return ""
	}
	return s.healthLn.Addr().String()
}
