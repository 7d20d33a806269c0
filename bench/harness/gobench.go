package harness

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// BenchmarkLine is one result line of go test -bench.
type BenchmarkLine struct {
	Pkg         string             `json:"pkg"`
	Name        string             `json:"name"`
	Procs       int                `json:"procs"`
	N           int64              `json:"n"`
	NsPerOp     float64            `json:"ns_per_op"`
	BytesPerOp  float64            `json:"bytes_per_op"`
	AllocsPerOp float64            `json:"allocs_per_op"`
	Extra       map[string]float64 `json:"extra,omitempty"`
}

// ParseBenchmarks reads the result lines of go test -bench -benchmem
// output; other lines are ignored.
func ParseBenchmarks(pkg, out string) []BenchmarkLine {
	var res []BenchmarkLine
	for line := range strings.SplitSeq(out, "\n") {
		if b, ok := parseBenchmarkLine(pkg, line); ok {
			res = append(res, b)
		}
	}
	return res
}

func parseBenchmarkLine(pkg, line string) (BenchmarkLine, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return BenchmarkLine{}, false
	}
	b := BenchmarkLine{Pkg: pkg, Name: f[0], Procs: 1}
	if i := strings.LastIndexByte(f[0], '-'); i > 0 {
		if p, err := strconv.Atoi(f[0][i+1:]); err == nil {
			b.Name, b.Procs = f[0][:i], p
		}
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return BenchmarkLine{}, false
	}
	b.N = n
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return BenchmarkLine{}, false
		}
		switch unit := f[i+1]; unit {
		case "ns/op":
			b.NsPerOp = v
		case "B/op":
			b.BytesPerOp = v
		case "allocs/op":
			b.AllocsPerOp = v
		default:
			if b.Extra == nil {
				b.Extra = map[string]float64{}
			}
			b.Extra[unit] = v
		}
	}
	return b, true
}

// Short is the line's headline number: its ns/op in a readable unit, and
// the benchmark's own metrics.
func (b BenchmarkLine) Short() string {
	s := humanNs(b.NsPerOp)
	for _, unit := range slices.Sorted(maps.Keys(b.Extra)) {
		s += fmt.Sprintf(",%g %s", b.Extra[unit], unit)
	}
	return s
}

func humanNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2fs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2fµs", ns/1e3)
	default:
		return fmt.Sprintf("%.0fns", ns)
	}
}
