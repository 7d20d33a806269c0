// Package ops serves the plain-HTTP operations port: liveness, readiness,
// status and Prometheus metrics. It stays plain HTTP on purpose: probes
// such as Kubernetes' cannot speak TLS or gRPC-with-TLS. Everything on it
// is open to whoever reaches it, so it serves nothing that changes state or
// reveals more than status; pprof has a port of its own (debug.go).
package ops

import (
	"encoding/json"
	"net/http"
	"sync/atomic"

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
}

// Server holds the handlers of one node's ops port.
type Server struct {
	node     Node
	registry Registry
	mux      *http.ServeMux
	// draining is set once on graceful stop and never cleared: from then on
	// the node reports not ready so load balancers stop sending to it.
	draining atomic.Bool
}

// New builds the ops handlers for one node; extra collectors (the
// scheduler's) are served on /metrics too.
func New(n Node, r Registry, version string, extra ...prometheus.Collector) (*Server, error) {
	s := &Server{node: n, registry: r, mux: http.NewServeMux()}
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
