package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
)

func TestQuickModeShortensEveryScenario(t *testing.T) {
	full, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	quick, err := parseFlags([]string{"-quick"})
	if err != nil {
		t.Fatal(err)
	}
	if full.ScaleJobs != 1_000_000 || quick.ScaleJobs != 50_000 {
		t.Errorf("scale jobs full %d quick %d", full.ScaleJobs, quick.ScaleJobs)
	}
	if full.SteadyDuration != time.Minute || quick.SteadyDuration >= full.SteadyDuration {
		t.Errorf("steady full %s quick %s", full.SteadyDuration, quick.SteadyDuration)
	}
	if full.FailoverRounds != 20 || quick.FailoverRounds >= full.FailoverRounds {
		t.Errorf("failover rounds full %d quick %d", full.FailoverRounds, quick.FailoverRounds)
	}
	if full.BurstJobs != 10_000 || len(full.Scenarios) != len(scenarios)-2 || slices.Contains(full.Scenarios, "httpfloor") || slices.Contains(full.Scenarios, burstFeaturesName) {
		t.Errorf("burst jobs %d scenarios %v", full.BurstJobs, full.Scenarios)
	}
	if full.ScaleSnapshotWait <= 0 || quick.ScaleSnapshotWait != 0 {
		t.Errorf("snapshot wait full %s quick %s", full.ScaleSnapshotWait, quick.ScaleSnapshotWait)
	}
}

func TestBadFlagsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"-scenarios", "burst,nope"}, "-scenarios"},
		{[]string{"-scenarios", ","}, "-scenarios"},
		{[]string{"-steady-period", "7"}, "-steady-period"},
		{[]string{"-burst-jobs", "-1"}, "-burst-jobs"},
		{[]string{"-failover-rounds", "-2"}, "-failover-rounds"},
		{[]string{"extra"}, "unexpected"},
	} {
		if _, err := parseFlags(c.args); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: err %v, want one naming %s", c.args, err, c.flag)
		}
	}
}

func TestSteadyWindowCoversWholePeriods(t *testing.T) {
	c, err := parseFlags([]string{"-steady-duration", "12s", "-steady-period", "5"})
	if err != nil {
		t.Fatal(err)
	}
	if c.SteadyDuration != 15*time.Second {
		t.Errorf("window %s, want 15s", c.SteadyDuration)
	}
}

func TestNextAtSecond(t *testing.T) {
	base := time.Date(2026, 5, 1, 10, 0, 58, 300e6, time.UTC)
	for _, c := range []struct {
		sec  int
		want time.Time
	}{
		{59, time.Date(2026, 5, 1, 10, 0, 59, 0, time.UTC)},
		{58, time.Date(2026, 5, 1, 10, 1, 58, 0, time.UTC)}, // 10:00:58 began before base
		{3, time.Date(2026, 5, 1, 10, 1, 3, 0, time.UTC)},
	} {
		if got := nextAtSecond(base, c.sec); !got.Equal(c.want) {
			t.Errorf("nextAtSecond(%d) = %s, want %s", c.sec, got, c.want)
		}
	}
	exact := time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC)
	if got := nextAtSecond(exact, 7); !got.Equal(exact) {
		t.Errorf("a whole second is its own next: %s", got)
	}
}

func TestLedgerFindsMissingDuplicateAndRedelivered(t *testing.T) {
	d := func(slot int64, run string) harness.Delivery {
		return harness.Delivery{Job: failoverJob, Slot: slot, RunID: run}
	}
	all := []harness.Delivery{
		d(100, "r100"), d(101, "r101"), d(101, "r101"), // 101 re-delivered, same run
		d(103, "r103"), d(103, "r103b"), // 102 missing, 103 under two runs
		{Job: "other", Slot: 150, RunID: "x"}, // another job does not widen the range
		d(104, "r104"),
	}
	var r failoverRun
	r.ledger(all)
	if r.Slots != 5 || r.MissingSlots != 1 || r.DuplicateSlots != 1 || r.Redeliveries != 1 {
		t.Errorf("ledger = %+v", r)
	}
	if len(r.Missing) != 1 || r.Missing[0] != time.Unix(102, 0).UTC().Format(time.RFC3339) {
		t.Errorf("missing list %v", r.Missing)
	}
}
