package alert

import (
	"github.com/prometheus/client_golang/prometheus"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// metrics are the alerter's Prometheus series. The leader counts: each
// alert once, by the leader that first sends it, and every delivery
// attempt it makes.
type metrics struct {
	alerts     *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	open       prometheus.GaugeFunc
}

func newMetrics(st State) *metrics {
	return &metrics{
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftcron_alerts_total",
			Help: "Alert notifications committed, by event and channel, counted by the leader that first sends each.",
		}, []string{"event", "channel"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftcron_alert_deliveries_total",
			Help: "Delivery attempts of alert notifications by this node, by channel and result (delivered, failed, given_up).",
		}, []string{"channel", "result"}),
		open: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_alerts_open",
			Help: "Alert episodes open: raised and not yet recovered.",
		}, func() float64 { return float64(st.AlertsOpen()) }),
	}
}

func (m *metrics) raised(a *pb.Alert) {
	m.alerts.WithLabelValues(a.GetEvent(), a.GetChannel()).Inc()
}

func (m *metrics) delivered(channel string, ok, final bool) {
	result := "failed"
	switch {
	case ok:
		result = "delivered"
	case final:
		result = "given_up"
	}
	m.deliveries.WithLabelValues(channel, result).Inc()
}

// Collectors are the alerter's series, for the node's registry.
func (a *Alerter) Collectors() []prometheus.Collector {
	return []prometheus.Collector{a.metrics.alerts, a.metrics.deliveries, a.metrics.open}
}
