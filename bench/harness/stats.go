package harness

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a sample of durations, in milliseconds (JSON-friendly).
type Dist struct {
	N      int     `json:"n"`
	MinMs  float64 `json:"min_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// Summarize computes the distribution of d (which it sorts in place).
// Percentiles use the nearest-rank method: p99 of 100 samples is the 99th
// smallest.
func Summarize(d []time.Duration) Dist {
	if len(d) == 0 {
		return Dist{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return Dist{
		N:      len(d),
		MinMs:  ms(d[0]),
		P50Ms:  ms(Percentile(d, 50)),
		P90Ms:  ms(Percentile(d, 90)),
		P99Ms:  ms(Percentile(d, 99)),
		MaxMs:  ms(d[len(d)-1]),
		MeanMs: ms(sum / time.Duration(len(d))),
	}
}

// Percentile is the nearest-rank p-th percentile of sorted; 0 when empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// Ms converts a duration to milliseconds with microsecond precision.
func Ms(d time.Duration) float64 { return ms(d) }
