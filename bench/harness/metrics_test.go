package harness

import (
	"math"
	"testing"
)

const exposition = `# HELP x_seconds A histogram.
# TYPE x_seconds histogram
x_seconds_bucket{le="0.01"} 10
x_seconds_bucket{le="0.1"} 30
x_seconds_bucket{le="+Inf"} 40
x_seconds_sum 3.2
x_seconds_count 40
raftcron_runs_missed_total{reason="overlap_skipped"} 3
raftcron_runs_missed_total{reason="paused"} 2
raftcron_build_info{version="v1 (a \"b\" {c})"} 1
raftcron_raft_commitTime{quantile="0.5"} NaN
raftcron_raft_commitTime_sum 12
raftcron_raft_commitTime_count 4
plain 7
garbage line without value
`

func TestParseMetricsReadsSeriesAndLabels(t *testing.T) {
	m := ParseMetrics(exposition)
	if got := m.Sum("plain"); got != 7 {
		t.Errorf("plain = %v, want 7", got)
	}
	if got := m.Sum("raftcron_runs_missed_total"); got != 5 {
		t.Errorf("missed total = %v, want 5", got)
	}
	if got := m.SumWhere("raftcron_runs_missed_total", "reason", "paused"); got != 2 {
		t.Errorf("missed paused = %v, want 2", got)
	}
	if got := m.Sum("raftcron_build_info"); got != 1 {
		t.Errorf("a label value with quotes and braces broke parsing: build_info = %v", got)
	}
	if got := m.Sum("raftcron_raft_commitTime"); got != 0 {
		t.Errorf("NaN quantiles must not count: %v", got)
	}
	if v, ok := Label(`a{x="1",y="two"}`, "y"); !ok || v != "two" {
		t.Errorf("Label y = %q %v", v, ok)
	}
}

func TestHistogramQuantileInterpolatesInsideBuckets(t *testing.T) {
	h := ParseMetrics(exposition).Histogram("x_seconds")
	if len(h) != 3 || !math.IsInf(h[2].LE, 1) {
		t.Fatalf("buckets = %+v", h)
	}
	// 40 observations: rank 20 is the middle of the (0.01, 0.1] bucket.
	if got := HistogramQuantile(0.5, h); math.Abs(got-0.055) > 1e-9 {
		t.Errorf("p50 = %v, want 0.055", got)
	}
	if got := HistogramQuantile(0.99, h); got != 0.1 {
		t.Errorf("p99 in the +Inf bucket = %v, want the largest finite bound 0.1", got)
	}
	if got := HistogramQuantile(0.5, HistogramDelta(h, h)); !math.IsNaN(got) {
		t.Errorf("quantile of an empty delta = %v, want NaN", got)
	}
}

func TestTimerDelta(t *testing.T) {
	before := ParseMetrics("t_sum 10\nt_count 2\n")
	after := ParseMetrics("t_sum 40\nt_count 5\n")
	if d := Timer(before, after, "t"); d.Count != 3 || d.Mean != 10 {
		t.Errorf("Timer = %+v, want 3 samples of mean 10", d)
	}
}
