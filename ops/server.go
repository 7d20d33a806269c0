// Package ops serves the HTTP port of a node: liveness, readiness, status
// and Prometheus metrics, and whatever else is mounted on it (the JSON
// API). What ops serves itself is open to whoever reaches it, so it changes
// no state and reveals no more than status; pprof has a port of its own
// (debug.go). The JSON API and the UI mounted beside it are clients of the
// node's own gRPC server, behind its ACLs, and behind a Host check against
// DNS rebinding (Hosts). The port is plain HTTP unless the
// http.Server it runs in has a TLS config (Serve); probes such as
// Kubernetes' cannot speak TLS, and HealthHandler serves them on a plain
// port of their own then.
package ops

import (
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Node is what the ops port needs from the cluster member.
type Node interface {
	Status() *pb.NodeStatus
	Ready() bool
	IsLeader() bool
	LeaderChanges() uint64
}

// Registry is what the ops port needs from the replicated state.
type Registry interface {
	FencingToken() uint64
	JobCount() int
	// LastHour is what the runs did in the hour up to now
	// (fsm.FSM.LastHour).
	LastHour(now time.Time) *pb.RunCounts
}

// Server holds the handlers of one node's ops port.
type Server struct {
	node     Node
	registry Registry
	mux      *http.ServeMux
	// hosts checks the Host of every request to a mounted handler.
	hosts *Hosts
	// draining is set once on graceful stop and never cleared: from then on
	// the node reports not ready so load balancers stop sending to it.
	draining atomic.Bool
}

// New builds the ops handlers for one node; extra collectors (the
// scheduler's) are served on /metrics too. hosts is the Host check of what
// is mounted (nil: IP literals and localhost only); the ops endpoints stay
// open to any Host, since probes and Prometheus call them by whatever name
// they know the node.
func New(n Node, r Registry, version string, hosts *Hosts, extra ...prometheus.Collector) (*Server, error) {
	s := &Server{node: n, registry: r, mux: http.NewServeMux(), hosts: hosts}
	reg, err := newRegistry(n, r, version, append(extra, s.collectors()...))
	if err != nil {
		return nil, err
	}
	s.mux.HandleFunc("GET /livez", s.livez)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET /status", s.status)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return s, nil
}

// Handler returns the ops port's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Mount serves h under pattern (an http.ServeMux pattern, e.g. "/v1/") on
// the ops port beside the operations endpoints, behind the Host check: a
// request with another Host is answered 421 before h sees it. Call it
// before serving.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, s.hosts.Guard(h)) }

// HealthHandler serves only /livez and /readyz, for a plain-HTTP port of
// their own when the ops port speaks TLS: Kubernetes' probes, for one,
// cannot check a certificate.
func (s *Server) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", s.livez)
	mux.HandleFunc("GET /readyz", s.readyz)
	return mux
}

// Serve serves srv on ln: over TLS when srv.TLSConfig is set (its
// certificate, or GetCertificate, must then be the node's), plain HTTP
// otherwise. It returns as http.Server.Serve does.
func Serve(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}

// SetDraining makes /readyz fail from now on.
func (s *Server) SetDraining() { s.draining.Store(true) }

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		writeText(w, http.StatusServiceUnavailable, "draining")
	case !s.node.Ready():
		writeText(w, http.StatusServiceUnavailable, "not ready: no known leader or log not yet applied")
	default:
		writeText(w, http.StatusOK, "ready")
	}
}

// Ready reports what /readyz answers: the node knows a leader and has
// applied up to the commit index, and no stop has begun.
func (s *Server) Ready() bool { return !s.draining.Load() && s.node.Ready() }

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	doc := StatusOf(s.node.Status())
	doc.FencingToken = s.registry.FencingToken()
	doc.LastHour = runCountsOf(s.registry.LastHour(time.Now()))
	ready := s.Ready()
	doc.Ready = &ready
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}
