package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestGCPercentFollowsTheMemoryLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		limit  int64
		gogc   string
		want   int
		wantOK bool
	}{
		{"a limit in force", 1 << 30, "", gcPercentUnderLimit, true},
		{"no limit", math.MaxInt64, "", 0, false},
		{"GOGC set", 1 << 30, "150", 0, false},
		{"GOGC off", 1 << 30, "off", 0, false},
	}
	for _, c := range cases {
		got, ok := gcPercent(c.limit, c.gogc)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

func TestApplyGCPercentSetsTheCollector(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	t.Setenv("GOGC", "")
	if p, source := applyGCPercent(1 << 30); p != "400" || source != "memory limit" {
		t.Fatalf("with a limit: GOGC %s from %s, want 400 from the memory limit", p, source)
	}
	if got := debug.SetGCPercent(100); got != gcPercentUnderLimit {
		t.Fatalf("the collector runs at GOGC %d, want %d", got, gcPercentUnderLimit)
	}
	if p, source := applyGCPercent(math.MaxInt64); p != "100" || debug.SetGCPercent(100) != 100 {
		t.Fatalf("without a limit: GOGC %s from %s; want the runtime's 100 left alone", p, source)
	}
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what the runtime did with GOGC at start
	if p, source := applyGCPercent(1 << 30); p != "150" || source != "GOGC" || debug.SetGCPercent(150) != 150 {
		t.Fatalf("with GOGC=150: %s from %s; want GOGC's 150 kept", p, source)
	}
}
