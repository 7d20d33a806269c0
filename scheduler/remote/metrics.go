package remote

import "github.com/prometheus/client_golang/prometheus"

// metrics are the hub's Prometheus collectors.
type metrics struct {
	connected *prometheus.GaugeVec
	waiting   prometheus.GaugeFunc
	offered   prometheus.Counter
	lost      prometheus.Counter
	noWorker  prometheus.Counter
	wait      prometheus.Histogram
}

func newMetrics(h *Hub) *metrics {
	return &metrics{
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "raftcron_workers_connected",
			Help: "Workers connected to this node (the leader), by pool.",
		}, []string{"pool"}),
		waiting: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_worker_attempts_waiting",
			Help: "Committed worker attempts that no worker has taken yet.",
		}, func() float64 { return float64(h.waiting()) }),
		offered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftcron_worker_attempts_offered_total",
			Help: "Attempts offered to workers.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftcron_worker_attempts_lost_total",
			Help: "Attempts whose worker missed its lease or whose stream broke.",
		}),
		noWorker: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftcron_worker_attempts_no_worker_total",
			Help: "Attempts failed with no_worker: no worker of their pool took them in time.",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "raftcron_worker_attempt_wait_seconds",
			Help:    "How long committed attempts waited on the leader for a worker of their pool with room for them, until offered.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.connected, m.waiting, m.offered, m.lost, m.noWorker, m.wait}
}
