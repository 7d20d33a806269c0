package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/bench/harness"
)

// fakeMetrics stand in for a scenario's: one judged figure and one not.
type fakeMetrics struct{ p99 float64 }

func (m *fakeMetrics) figures() []figure {
	return []figure{
		{Name: "lateness p99", Unit: "ms", Better: harness.Lower, Value: m.p99},
		{Name: "floor p99", Unit: "ms", Better: harness.Neither, Value: 50},
	}
}

// fakeBinary is a node binary that answers `version` and nothing else.
func fakeBinary(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho raftcron "+name+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeRun is a scenario that takes no time: its p99 is the next of the
// binary's values, and a value below 0 is a violation.
type fakeRun struct {
	values map[string][]float64 // by binary
	calls  []string             // each run's label and binary, in order
}

func (f *fakeRun) scenario(name string) scenario {
	return scenario{name, func(_ context.Context, e *env, res *Result) error {
		f.calls = append(f.calls, e.label+" "+filepath.Base(e.cfg.Bin))
		vs := f.values[e.cfg.Bin]
		v := vs[0]
		f.values[e.cfg.Bin] = vs[1:]
		res.Metrics = &fakeMetrics{p99: v}
		if v < 0 {
			res.violate("fake lost a fire")
		}
		return nil
	}}
}

func repeatedRunner(t *testing.T, f *fakeRun, args ...string) *runner {
	t.Helper()
	cfg, err := parseFlags(append([]string{"-out", t.TempDir(), "-work", t.TempDir(), "-scenarios", "burst"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.scenarios = []scenario{f.scenario("burst")}
	return r
}

// readFigures checks that figures.json keeps every run's raw figures and
// returns figures.md.
func readFigures(t *testing.T, r *runner) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.env.runDir, "figures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Scenarios []struct {
			Scenario string `json:"scenario"`
			Runs     []struct {
				Arm     string `json:"arm"`
				Round   int    `json:"round"`
				Counted bool   `json:"counted"`
				Figures []figure
			} `json:"runs"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(r.env.runDir, "figures.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The raw figures of every run are kept, counted or not.
	if len(raw.Scenarios) != 1 || len(raw.Scenarios[0].Runs) == 0 || len(raw.Scenarios[0].Runs[0].Figures) != 2 {
		t.Errorf("figures.json keeps no raw figures: %s", data)
	}
	return string(md)
}

func TestABRunsOldAndNewInTurnAndPairsThem(t *testing.T) {
	oldBin, newBin := fakeBinary(t, "old"), fakeBinary(t, "new")
	f := &fakeRun{values: map[string][]float64{oldBin: {100, 120, 90}, newBin: {80, 125, 70}}}
	r := repeatedRunner(t, f, "-bin", newBin, "-ab", oldBin, "-repeat", "3")
	if got := r.runAll(context.Background()); got != 0 {
		t.Fatalf("exit status %d", got)
	}
	want := []string{"old01 old", "new01 new", "old02 old", "new02 new", "old03 old", "new03 new"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("runs in the order %q, want %q", f.calls, want)
	}
	for _, dir := range []string{"old01", "new03"} {
		if _, err := os.Stat(filepath.Join(r.env.runDir, dir, "burst.json")); err != nil {
			t.Errorf("no result of %s: %v", dir, err)
		}
	}
	md := readFigures(t, r)
	for _, row := range []string{
		// Pairs: 80−100, 125−120, 70−90; ratios 0.80, 1.04, 0.78.
		"| lateness p99 (ms) | 100 [90–120] | 80 [70–125] | −20.0 [−20.0–+5.0] | 0.80× [0.78–1.04] | 2/3 |",
		"| floor p99 (ms) | 50.0 [50.0–50.0] | 50.0 [50.0–50.0] | 0.00 [0.00–0.00] | 1.00× [1.00–1.00] | — |",
		"old: " + oldBin + " (raftcron old",
		"3 pairs, run old, new, old, new",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("figures.md lacks %q:\n%s", row, md)
		}
	}
}

func TestRepeatTakesMedianMinMaxOfCountedRuns(t *testing.T) {
	bin := fakeBinary(t, "raftcron")
	f := &fakeRun{values: map[string][]float64{bin: {3, -1, 5}}}
	r := repeatedRunner(t, f, "-bin", bin, "-repeat", "3")
	if got := r.runAll(context.Background()); got != 1 {
		t.Errorf("exit status %d, want 1 (a run had a violation)", got)
	}
	if want := []string{"run01 raftcron", "run02 raftcron", "run03 raftcron"}; !slices.Equal(f.calls, want) {
		t.Errorf("runs %q, want %q", f.calls, want)
	}
	md := readFigures(t, r)
	for _, line := range []string{
		"| figure | median [min–max] | runs |",
		"| lateness p99 (ms) | 4.00 [3.00–5.00] | 2 |",
		"Not counted: run02 (violations: fake lost a fire).",
	} {
		if !strings.Contains(md, line) {
			t.Errorf("figures.md lacks %q:\n%s", line, md)
		}
	}
}

func TestOneRunKeepsTheLayoutOfBefore(t *testing.T) {
	bin := fakeBinary(t, "raftcron")
	f := &fakeRun{values: map[string][]float64{bin: {3}}}
	r := repeatedRunner(t, f, "-bin", bin)
	if got := r.runAll(context.Background()); got != 0 {
		t.Fatalf("exit status %d", got)
	}
	for _, name := range []string{"burst.json", "summary.txt"} {
		if _, err := os.Stat(filepath.Join(r.env.runDir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(r.env.runDir, "figures.md")); !os.IsNotExist(err) {
		t.Errorf("a single run wrote figures.md (%v)", err)
	}
}

func TestRepeatAndABFlags(t *testing.T) {
	c, err := parseFlags([]string{"-repeat", "5", "-ab", "old/raftcron"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Repeat != 5 || c.ABOld != "old/raftcron" {
		t.Errorf("repeat %d ab %q", c.Repeat, c.ABOld)
	}
	if slices.Contains(c.Scenarios, "micro") || !slices.Contains(c.Scenarios, "burst") {
		t.Errorf("-ab's default scenarios %v: want every default but micro", c.Scenarios)
	}
	if c, err := parseFlags(nil); err != nil || c.Repeat != 1 || c.ABOld != "" {
		t.Errorf("defaults: repeat %d ab %q (%v)", c.Repeat, c.ABOld, err)
	}
	for _, bad := range []struct {
		args []string
		flag string
	}{
		{[]string{"-repeat", "0"}, "-repeat"},
		{[]string{"-repeat", "x"}, "-repeat"},
		{[]string{"-ab", "old", "-scenarios", "burst,micro"}, "-ab"},
	} {
		if _, err := parseFlags(bad.args); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%v: err %v, want one naming %s", bad.args, err, bad.flag)
		}
	}
	if _, err := newRunner(config{Bin: fakeBinary(t, "new"), ABOld: filepath.Join(t.TempDir(), "missing"), Out: t.TempDir(), Repeat: 1}); err == nil || !strings.Contains(err.Error(), "-ab") {
		t.Errorf("a missing -ab binary: %v", err)
	}
}
