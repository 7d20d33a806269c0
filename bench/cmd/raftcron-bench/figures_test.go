package main

import (
	"testing"

	"github.com/raftcron/raftcron/bench/harness"
)

func TestBurstFiguresGoByRoleAndIncludeTheFloorRatios(t *testing.T) {
	m := &burstMetrics{
		Lateness: harness.Dist{P50Ms: 300, P99Ms: 500, MaxMs: 520},
		Floor:    &floorWave{Lateness: harness.Dist{P50Ms: 150, P99Ms: 250}},
		Ratio:    &ratios{P50: 2, P99: 2},
		CPUPerFire: &fireCPU{NodesTotal: 110, Receiver: 35, Nodes: map[string]nodeFireCPU{
			"n1": {"follower", 20}, "n2": {"leader", 60}, "n3": {"follower", 30},
		}},
		CPU: cpuWindow{Nodes: map[string]nodeUsage{
			"n1": {Role: "follower", PeakMB: 90}, "n2": {Role: "leader", PeakMB: 200}, "n3": {Role: "follower", PeakMB: 95},
		}},
	}
	got := map[string]figure{}
	for _, f := range figuresOf(&Result{Metrics: m}) {
		if _, dup := got[f.Name]; dup {
			t.Errorf("figure %q twice", f.Name)
		}
		got[f.Name] = f
	}
	for name, want := range map[string]float64{
		"lateness p99": 500, "floor p99": 250, "p99 ÷ floor": 2, "p50 ÷ floor": 2,
		"CPU per fire, nodes": 110, "CPU per fire, leader": 60, "CPU per fire, follower (mean)": 25,
		"CPU per fire, receiver": 35, "peak RSS, leader": 200, "peak RSS, follower (max)": 95,
	} {
		if f, ok := got[name]; !ok || f.Value != want {
			t.Errorf("%s = %+v, want %v", name, f, want)
		}
	}
	if got["lateness p99"].Better != harness.Lower || got["floor p99"].Better != harness.Neither || got["deliveries/s"].Better != harness.Higher {
		t.Errorf("directions: %+v %+v %+v", got["lateness p99"], got["floor p99"], got["deliveries/s"])
	}
	if _, ok := got["chained fires delivered"]; ok {
		t.Error("the plain burst reports chained fires")
	}
}
