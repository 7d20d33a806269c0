package harness

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// Metrics is one scrape of a Prometheus text exposition: series (the name
// with its labels, as written) to value.
type Metrics map[string]float64

// ParseMetrics reads the text format; comments and lines it cannot read are
// skipped.
func ParseMetrics(text string) Metrics {
	m := make(Metrics)
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var series, rest string
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			series, rest = line[:i+1], strings.TrimSpace(line[i+1:])
		} else {
			var ok bool
			if series, rest, ok = strings.Cut(line, " "); !ok {
				continue
			}
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				m[series] = v
			}
		}
	}
	return m
}

// SeriesName is the metric name of a series.
func SeriesName(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i]
	}
	return series
}

// Label returns the value of label key in series, if present.
func Label(series, key string) (string, bool) {
	i := strings.IndexByte(series, '{')
	if i < 0 {
		return "", false
	}
	body := strings.TrimSuffix(series[i+1:], "}")
	for body != "" {
		k, v, ok := strings.Cut(body, `="`)
		if !ok {
			return "", false
		}
		end := strings.Index(v, `"`)
		for end > 0 && v[end-1] == '\\' {
			next := strings.Index(v[end+1:], `"`)
			if next < 0 {
				return "", false
			}
			end += next + 1
		}
		if end < 0 {
			return "", false
		}
		if strings.TrimSpace(k) == key {
			return v[:end], true
		}
		body = strings.TrimPrefix(strings.TrimSpace(v[end+1:]), ",")
	}
	return "", false
}

// Sum adds every series of the named metric, whatever its labels (NaN
// values are skipped).
func (m Metrics) Sum(name string) float64 {
	var s float64
	for series, v := range m {
		if SeriesName(series) == name && !math.IsNaN(v) {
			s += v
		}
	}
	return s
}

// SumWhere adds the series of the named metric whose label key has value.
func (m Metrics) SumWhere(name, key, value string) float64 {
	var s float64
	for series, v := range m {
		if SeriesName(series) != name {
			continue
		}
		if got, ok := Label(series, key); ok && got == value && !math.IsNaN(v) {
			s += v
		}
	}
	return s
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	LE    float64
	Count float64
}

// Histogram returns the cumulative buckets of histogram name, sorted by
// upper bound (the +Inf bucket last).
func (m Metrics) Histogram(name string) []Bucket {
	var out []Bucket
	for series, v := range m {
		if SeriesName(series) != name+"_bucket" {
			continue
		}
		le, ok := Label(series, "le")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		out = append(out, Bucket{LE: f, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LE < out[j].LE })
	return out
}

// HistogramDelta is after − before, bucket by bucket (buckets missing from
// before count as zero).
func HistogramDelta(before, after []Bucket) []Bucket {
	prev := make(map[float64]float64, len(before))
	for _, b := range before {
		prev[b.LE] = b.Count
	}
	out := make([]Bucket, len(after))
	for i, b := range after {
		out[i] = Bucket{LE: b.LE, Count: b.Count - prev[b.LE]}
	}
	return out
}

// HistogramQuantile estimates quantile q (0..1) of cumulative buckets by
// linear interpolation inside the bucket, as Prometheus does. It returns
// NaN with no observations; a quantile in the +Inf bucket returns the
// largest finite bound.
func HistogramQuantile(q float64, buckets []Bucket) float64 {
	if len(buckets) == 0 {
		return math.NaN()
	}
	total := buckets[len(buckets)-1].Count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, prevCount := 0.0, 0.0
	for _, b := range buckets {
		if b.Count >= rank {
			if math.IsInf(b.LE, 1) {
				return lower
			}
			in := b.Count - prevCount
			if in <= 0 {
				return b.LE
			}
			return lower + (b.LE-lower)*(rank-prevCount)/in
		}
		if !math.IsInf(b.LE, 1) {
			lower = b.LE
		}
		prevCount = b.Count
	}
	return lower
}

// TimerDelta is the change of a go-metrics timer (exported as a Prometheus
// summary in milliseconds) between two scrapes: how many samples and their
// mean.
type TimerDelta struct {
	Count float64 `json:"count"`
	Mean  float64 `json:"mean"`
}

// Timer computes the delta of summary name between before and after.
func Timer(before, after Metrics, name string) TimerDelta {
	n := after.Sum(name+"_count") - before.Sum(name+"_count")
	s := after.Sum(name+"_sum") - before.Sum(name+"_sum")
	d := TimerDelta{Count: n}
	if n > 0 {
		d.Mean = s / n
	}
	return d
}
