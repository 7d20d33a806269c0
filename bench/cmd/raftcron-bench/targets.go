package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/raftcron/raftcron/bench/harness"
)

// The DESIGN §13 targets, in the units the scenarios measure.
const (
	burstP99MaxMs   = 250
	steadyP99MaxMs  = 50
	workersP99MaxMs = 100
	// workersHTTPP99MaxMs is issue 32's: the HTTP protocol's long polls
	// and one complete per attempt cost more than the gRPC stream's batches.
	workersHTTPP99MaxMs = 250
	// floorRatioMax bounds a lateness p99 as a multiple of the floor's
	// p99 measured in the same run.
	floorRatioMax = 1.5
	// cpuPerFireMaxUs bounds the CPU of all three nodes together per fire.
	cpuPerFireMaxUs = 90
	scaleRSSMaxMB   = 1536 // 1.5 GiB
	scaleReadyMaxMs = 5000
)

// ratios are a lateness distribution divided by its floor's, quantile by
// quantile: 1.0 is raftcron adding nothing to the HTTP beneath it.
type ratios struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// ratiosOf divides d by floor; nil when there is no floor or it has no
// samples or a zero quantile, so there is nothing to divide by.
func ratiosOf(d harness.Dist, floor *harness.Dist) *ratios {
	if floor == nil || floor.N == 0 || floor.P50Ms <= 0 || floor.P99Ms <= 0 {
		return nil
	}
	return &ratios{P50: round3(d.P50Ms / floor.P50Ms), P99: round3(d.P99Ms / floor.P99Ms)}
}

// latenessTargets judges a lateness scenario's p99 absolutely and against
// the floor of the same run (nil when it could not be measured, which
// misses the ratio target). complete is false when fires went undelivered:
// a p99 over part of the fires meets nothing.
func latenessTargets(d harness.Dist, complete bool, maxMs float64, floor *harness.Dist) []Target {
	out := []Target{{Name: "p99", Target: fmt.Sprintf("≤ %g ms", maxMs), Value: d.P99Ms, Unit: "ms",
		Met: complete && d.P99Ms <= maxMs}}
	vs := Target{Name: "p99_vs_floor", Target: fmt.Sprintf("≤ %g× floor (not measured)", floorRatioMax), Unit: "× floor"}
	if floor != nil {
		vs.Target = fmt.Sprintf("≤ %g× floor (%.0f ms)", floorRatioMax, floor.P99Ms)
		if r := ratiosOf(d, floor); r != nil {
			vs.Value, vs.Met = r.P99, complete && r.P99 <= floorRatioMax
		}
	}
	return append(out, vs)
}

// nodeFireCPU is one node's CPU per fire.
type nodeFireCPU struct {
	Role string  `json:"role"`
	Us   float64 `json:"us"`
}

// fireCPU is the CPU time each process spent per fire delivered in a
// measured window, in µs.
type fireCPU struct {
	Fires      int                    `json:"fires"`
	Nodes      map[string]nodeFireCPU `json:"nodes"`
	NodesTotal float64                `json:"nodes_total"`
	// Receiver is the bench process: the webhook sink (the SDK workers
	// in the workers scenario) and the gRPC clients, idle in the window.
	Receiver float64 `json:"receiver"`
}

// cpuPerFire divides a window's CPU seconds by the fires delivered in it;
// nil when none were.
func cpuPerFire(w cpuWindow, fires int) *fireCPU {
	if fires <= 0 {
		return nil
	}
	us := func(s float64) float64 { return round3(s / float64(fires) * 1e6) }
	f := &fireCPU{Fires: fires, Nodes: map[string]nodeFireCPU{}, Receiver: us(w.BenchSeconds)}
	total := 0.0
	for id, u := range w.Nodes {
		f.Nodes[id] = nodeFireCPU{Role: u.Role, Us: us(u.CPUSeconds)}
		total += u.CPUSeconds
	}
	f.NodesTotal = us(total)
	return f
}

// cpuTarget judges the three nodes' CPU per fire.
func cpuTarget(f *fireCPU) Target {
	t := Target{Name: "cpu_per_fire_nodes", Target: fmt.Sprintf("≤ %d µs", cpuPerFireMaxUs), Unit: "µs"}
	if f != nil {
		t.Value, t.Met = f.NodesTotal, f.NodesTotal <= cpuPerFireMaxUs
	}
	return t
}

// floorBrief is the compact "floor p50/p99, ratio" part of a summary line.
func floorBrief(floor *harness.Dist, r *ratios) string {
	if floor == nil {
		return "floor not measured"
	}
	s := fmt.Sprintf("floor p50=%.0fms p99=%.0fms", floor.P50Ms, floor.P99Ms)
	if r != nil {
		s += fmt.Sprintf(" ratio p50=%.2f× p99=%.2f×", r.P50, r.P99)
	}
	return s
}

// cpuBrief is the compact CPU-per-fire part of a summary line: the nodes'
// total, each node (leader first), the receiver.
func cpuBrief(f *fireCPU) string {
	if f == nil {
		return "cpu/fire n/a"
	}
	ids := make([]string, 0, len(f.Nodes))
	for id := range f.Nodes {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if la, lb := f.Nodes[a].Role == "leader", f.Nodes[b].Role == "leader"; la != lb {
			if la {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		n := f.Nodes[id]
		parts = append(parts, fmt.Sprintf("%s %s %.0f", id, n.Role[:1], n.Us))
	}
	return fmt.Sprintf("cpu/fire nodes=%.0fµs (%s) receiver=%.0fµs", f.NodesTotal, strings.Join(parts, ", "), f.Receiver)
}
