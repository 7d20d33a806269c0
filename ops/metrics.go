package ops

import (
	"sync"

	gometrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// raftSink carries hashicorp/raft's own metrics into Prometheus. Raft reports
// to the process-wide go-metrics global (only when built with the
// hashicorpmetrics tag), so the sink is process-wide too: created once, then
// registered in every ops Server's registry.
var (
	raftSinkOnce sync.Once
	raftSink     *gmprom.PrometheusSink
	raftSinkErr  error
)

func sharedRaftSink() (*gmprom.PrometheusSink, error) {
	raftSinkOnce.Do(func() {
		raftSink, raftSinkErr = gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			Name:       "raftcron_raft_sink",
			Expiration: 0,
			// The sink registers itself; give it a private registry so that
			// the default registry stays untouched and each Server adds it.
			Registerer: prometheus.NewRegistry(),
		})
		if raftSinkErr != nil {
			return
		}
		cfg := gometrics.DefaultConfig("raftcron")
		cfg.EnableHostname = false       // the scraper labels the instance
		cfg.EnableRuntimeMetrics = false // the Go collector covers these
		_, raftSinkErr = gometrics.NewGlobal(cfg, raftSink)
	})
	return raftSink, raftSinkErr
}

func newRegistry(n Node, r Registry, version string, extra []prometheus.Collector) (*prometheus.Registry, error) {
	sink, err := sharedRaftSink()
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	cs := []prometheus.Collector{
		sink,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_is_leader",
			Help: "1 while this node is the Raft leader.",
		}, func() float64 { return boolFloat(n.IsLeader()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "raftcron_leader_changes_total",
			Help: "Leadership changes this node has observed.",
		}, func() float64 { return float64(n.LeaderChanges()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_fencing_token",
			Help: "The replicated fencing counter as applied on this node.",
		}, func() float64 { return float64(r.FencingToken()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_jobs",
			Help: "Registered jobs as applied on this node.",
		}, func() float64 { return float64(r.JobCount()) }),
		buildInfo(version),
	}
	for _, c := range append(cs, extra...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// collectors are the gauges that alerts need and only the Server can
// answer: readiness as /readyz sees it (draining included), and the Raft term,
// whose steps show elections on a dashboard.
func (s *Server) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_ready",
			Help: "1 while /readyz answers 200: a leader is known, the log is applied and the node is not draining.",
		}, func() float64 { return boolFloat(s.Ready()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_raft_term",
			Help: "The Raft term this node is in.",
		}, func() float64 { return float64(s.node.Status().GetTerm()) }),
	}
}

func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "raftcron_build_info",
		Help:        "Always 1; the version label says which build runs.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	g.Set(1)
	return g
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
