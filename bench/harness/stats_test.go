package harness

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
}

func TestSummarizeSortsAndReportsMilliseconds(t *testing.T) {
	d := Summarize([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond, 1500 * time.Microsecond})
	if d.N != 4 || d.MinMs != 1 || d.MaxMs != 3 || d.P50Ms != 1.5 || d.MeanMs != 1.875 {
		t.Errorf("Summarize = %+v", d)
	}
	if (Summarize(nil) != Dist{}) {
		t.Error("Summarize(nil) is not the zero Dist")
	}
}
