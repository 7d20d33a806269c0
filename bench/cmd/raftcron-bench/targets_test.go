package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
)

func TestRatiosDivideEachQuantileByTheFloors(t *testing.T) {
	floor := &harness.Dist{N: 10, P50Ms: 100, P99Ms: 200}
	r := ratiosOf(harness.Dist{N: 10, P50Ms: 150, P99Ms: 500}, floor)
	if r == nil || r.P50 != 1.5 || r.P99 != 2.5 {
		t.Fatalf("ratios = %+v, want p50 1.5 p99 2.5", r)
	}
	for _, bad := range []*harness.Dist{nil, {}, {N: 3, P50Ms: 0, P99Ms: 4}, {N: 3, P50Ms: 2, P99Ms: 0}} {
		if r := ratiosOf(harness.Dist{N: 1, P50Ms: 1, P99Ms: 1}, bad); r != nil {
			t.Errorf("floor %+v: ratios %+v, want none (nothing to divide by)", bad, r)
		}
	}
}

func TestLatenessTargetsJudgeAbsoluteAndRatio(t *testing.T) {
	floor := &harness.Dist{N: 100, P50Ms: 50, P99Ms: 200}
	for _, c := range []struct {
		name             string
		p99              float64
		complete         bool
		floor            *harness.Dist
		wantAbs, wantVs  bool
		wantRatio        float64
		wantVsTargetText string
	}{
		{"both met", 240, true, floor, true, true, 1.2, "≤ 1.5× floor (200 ms)"},
		{"ratio missed", 240, true, &harness.Dist{N: 100, P50Ms: 10, P99Ms: 100}, true, false, 2.4, "(100 ms)"},
		{"absolute missed", 290, true, floor, false, true, 1.45, "(200 ms)"},
		{"exactly at both bounds", 250, true, &harness.Dist{N: 1, P50Ms: 1, P99Ms: 250 / 1.5}, true, true, 1.5, "≤ 1.5×"},
		{"incomplete meets nothing", 10, false, floor, false, false, 0.05, "(200 ms)"},
		{"no floor misses the ratio", 10, true, nil, true, false, 0, "not measured"},
	} {
		ts := latenessTargets(harness.Dist{N: 100, P50Ms: 5, P99Ms: c.p99}, c.complete, burstP99MaxMs, c.floor)
		if len(ts) != 2 || ts[0].Name != "p99" || ts[1].Name != "p99_vs_floor" {
			t.Fatalf("%s: targets %+v", c.name, ts)
		}
		if ts[0].Met != c.wantAbs || ts[0].Value != c.p99 || ts[0].Target != "≤ 250 ms" {
			t.Errorf("%s: absolute %+v, want met=%v", c.name, ts[0], c.wantAbs)
		}
		if ts[1].Met != c.wantVs || ts[1].Value != c.wantRatio || !strings.Contains(ts[1].Target, c.wantVsTargetText) {
			t.Errorf("%s: ratio %+v, want met=%v value %v target containing %q", c.name, ts[1], c.wantVs, c.wantRatio, c.wantVsTargetText)
		}
	}
}

func TestCPUPerFireDividesWindowSecondsByFires(t *testing.T) {
	w := cpuWindow{
		Nodes: map[string]nodeUsage{
			"n1": {Role: "leader", CPUSeconds: 1.2},
			"n2": {Role: "follower", CPUSeconds: 0.3},
			"n3": {Role: "follower", CPUSeconds: 0.4},
		},
		BenchSeconds: 0.5,
	}
	f := cpuPerFire(w, 10_000)
	if f == nil {
		t.Fatal("no CPU per fire for 10,000 fires")
	}
	if f.Nodes["n1"] != (nodeFireCPU{Role: "leader", Us: 120}) || f.Nodes["n2"].Us != 30 || f.Nodes["n3"].Us != 40 {
		t.Errorf("per node %+v", f.Nodes)
	}
	if f.NodesTotal != 190 || f.Receiver != 50 || f.Fires != 10_000 {
		t.Errorf("total %v receiver %v fires %d, want 190, 50, 10000", f.NodesTotal, f.Receiver, f.Fires)
	}
	if got := cpuPerFire(w, 0); got != nil {
		t.Errorf("no fires gave %+v, want none", got)
	}
}

func TestCPUTargetBoundsTheNodesTotal(t *testing.T) {
	for _, c := range []struct {
		f    *fireCPU
		met  bool
		want float64
	}{
		{&fireCPU{NodesTotal: 90, Receiver: 500}, true, 90}, // the receiver is not the cluster's cost
		{&fireCPU{NodesTotal: 90.5}, false, 90.5},
		{nil, false, 0},
	} {
		got := cpuTarget(c.f)
		if got.Met != c.met || got.Value != c.want || got.Unit != "µs" || got.Target != "≤ 90 µs" {
			t.Errorf("cpuTarget(%+v) = %+v, want met=%v value %v", c.f, got, c.met, c.want)
		}
	}
}

func TestBriefsPutTheLeaderFirst(t *testing.T) {
	f := &fireCPU{NodesTotal: 190, Receiver: 42, Nodes: map[string]nodeFireCPU{
		"n1": {"follower", 39}, "n2": {"leader", 112}, "n3": {"follower", 39},
	}}
	want := "cpu/fire nodes=190µs (n2 l 112, n1 f 39, n3 f 39) receiver=42µs"
	if got := cpuBrief(f); got != want {
		t.Errorf("cpuBrief = %q, want %q", got, want)
	}
	if got := floorBrief(&harness.Dist{P50Ms: 80, P99Ms: 180}, &ratios{P50: 2.25, P99: 3.2}); got != "floor p50=80ms p99=180ms ratio p50=2.25× p99=3.20×" {
		t.Errorf("floorBrief = %q", got)
	}
	if got := floorBrief(nil, nil); got != "floor not measured" {
		t.Errorf("floorBrief without a floor = %q", got)
	}
}

func TestReceivedBetweenCountsTheWindowOnly(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) harness.Delivery {
		return harness.Delivery{Recv: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	ds := []harness.Delivery{at(-1), at(0), at(500), at(999), at(1000)}
	if got := receivedBetween(ds, t0, t0.Add(time.Second)); got != 3 {
		t.Errorf("received %d in [0, 1s), want 3", got)
	}
}

// The JSON field names are what docs/benchmarks.md describes.
func TestFireCPUJSONNames(t *testing.T) {
	data, err := json.Marshal(burstMetrics{CPUPerFire: &fireCPU{Fires: 1, Nodes: map[string]nodeFireCPU{"n1": {"leader", 1}}}, Ratio: &ratios{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"cpu_us_per_fire":{"fires":1,"nodes":{"n1":{"role":"leader","us":1}},"nodes_total":0,"receiver":0}`, `"ratio":{"p50":0,"p99":0}`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("JSON lacks %s:\n%s", k, data)
		}
	}
}
