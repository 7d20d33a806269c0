package scheduler

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// metrics are the scheduler's Prometheus collectors. The node registers
// them (Collectors); nothing here touches a global registry.
type metrics struct {
	lateness prometheus.Histogram
	runs     *prometheus.CounterVec
	missed   *prometheus.CounterVec
	skipped  *prometheus.CounterVec
	inFlight prometheus.GaugeFunc
}

func newMetrics(inFlight func() float64) *metrics {
	return &metrics{
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "raftcron_fire_lateness_seconds",
			Help: "Time from a slot's nominal time to the hand-over of its first attempt to a worker (scheduled and catch-up fires).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5,
				1, 2.5, 5, 10, 30, 60, 300},
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftcron_runs_total",
			Help: "Run attempts dispatched by this node, by outcome (succeeded, failed, fenced, deadline_exceeded, cancelled; unknown for at_most_once orphans; lost when a remote worker was).",
		}, []string{"outcome"}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftcron_runs_missed_total",
			Help: "Slots this node, as leader, recorded as missed, by reason.",
		}, []string{"reason"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftcron_runs_skipped_total",
			Help: "Slots this node, as leader, proposed and the state recorded as skipped, by the kind of rule that stopped them (calendar, freeze).",
		}, []string{"rule"}),
		inFlight: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_runs_in_flight",
			Help: "Attempts committed by this node and not yet finished (queued or executing).",
		}, inFlight),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.lateness, m.runs, m.missed, m.skipped, m.inFlight}
}

// skipRule is the kind of rule of a skip reason, "calendar" of
// "calendar:us-holidays": the rule's name would make a series per
// calendar.
func skipRule(reason string) string {
	rule, _, _ := strings.Cut(reason, ":")
	return rule
}

// outcomeLost labels an attempt whose remote worker was lost: it has no
// outcome of its own.
const outcomeLost = "lost"

// outcomeLabel is a run state as a metric label: "RUN_STATE_DEADLINE_EXCEEDED"
// becomes "deadline_exceeded".
func outcomeLabel(s pb.RunState) string {
	if l, ok := outcomeLabels[s]; ok {
		return l
	}
	return strings.ToLower(strings.TrimPrefix(s.String(), "RUN_STATE_"))
}

// kindLabel is a fire kind as a metric and log label: "FIRE_KIND_CATCHUP"
// becomes "catchup".
func kindLabel(k pb.FireKind) string {
	if l, ok := kindLabels[k]; ok {
		return l
	}
	return strings.ToLower(strings.TrimPrefix(k.String(), "FIRE_KIND_"))
}

// The labels of the known enum values, computed once: they are needed for
// every attempt.
var (
	outcomeLabels = enumLabels(pb.RunState_name, "RUN_STATE_", func(v int32) pb.RunState { return pb.RunState(v) })
	kindLabels    = enumLabels(pb.FireKind_name, "FIRE_KIND_", func(v int32) pb.FireKind { return pb.FireKind(v) })
)

func enumLabels[E comparable](names map[int32]string, prefix string, conv func(int32) E) map[E]string {
	out := make(map[E]string, len(names))
	for v, n := range names {
		out[conv(v)] = strings.ToLower(strings.TrimPrefix(n, prefix))
	}
	return out
}
