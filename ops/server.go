// Package ops serves the plain-HTTP operations port: liveness, readiness,
// status, Prometheus metrics and pprof. It stays plain HTTP on purpose:
// probes such as Kubernetes' cannot speak TLS or gRPC-with-TLS.
package ops

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
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
	s.mux.HandleFunc("/debug/pprof/", pprof.Index)
	s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return s, nil
}

// Handler returns the ops port's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Mount serves h under pattern (an http.ServeMux pattern, e.g. "/v1/") on
// the ops port beside the operations endpoints. Call it before serving.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// SetDraining makes /readyz fail from now on.
func (s *Server) SetDraining() { s.draining.Store(true) }

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

// ready is what /readyz answers 200 for.
func (s *Server) ready() bool { return s.node.Ready() && !s.draining.Load() }

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

// statusDoc is the /status contract of DESIGN §9; field names are fixed.
type statusDoc struct {
	ID           string      `json:"id"`
	Address      string      `json:"address"`
	State        string      `json:"state"`
	Leader       serverRef   `json:"leader"`
	Term         uint64      `json:"term"`
	CommitIndex  uint64      `json:"commit_index"`
	AppliedIndex uint64      `json:"applied_index"`
	LastLogIndex uint64      `json:"last_log_index"`
	FencingToken uint64      `json:"fencing_token"`
	Ready        bool        `json:"ready"`
	Servers      []serverDoc `json:"servers"`
	// The highest command version the node applies (DESIGN §16): an
	// operator watches it during a rolling upgrade.
	CommandVersion uint32 `json:"command_version"`
}

type serverRef struct {
	ID      string `json:"id"`
	Address string `json:"address"`
}

type serverDoc struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	st := s.node.Status()
	doc := statusDoc{
		ID:           st.GetId(),
		Address:      st.GetAddress(),
		State:        st.GetState(),
		Leader:       serverRef{ID: st.GetLeader().GetId(), Address: st.GetLeader().GetAddress()},
		Term:         st.GetTerm(),
		CommitIndex:  st.GetCommitIndex(),
		AppliedIndex: st.GetAppliedIndex(),
		LastLogIndex: st.GetLastLogIndex(),
		FencingToken: s.registry.FencingToken(),
		Ready:        s.ready(),
		Servers:      []serverDoc{},
		// DESIGN §16, beside the §9 fields above.
		CommandVersion: st.GetCommandVersion(),
	}
	for _, sv := range st.GetServers() {
		doc.Servers = append(doc.Servers, serverDoc{ID: sv.GetId(), Address: sv.GetAddress(), Suffrage: sv.GetSuffrage(), Leader: sv.GetLeader()})
	}
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
