package main

import (
	"strings"
	"testing"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/server"
)

// Every limit has a flag with its owner's default, also read from the
// environment and the file.
func TestServeLimitsDefaultsAndSources(t *testing.T) {
	cfg, err := loadForTest(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	want := server.Limits{
		MaxJobs: api.DefaultMaxJobs, MaxSpecBytes: jobspec.DefaultLimits.SpecBytes,
		MaxHeaders: jobspec.DefaultLimits.Headers, MaxEnv: jobspec.DefaultLimits.Env, MaxArgs: jobspec.DefaultLimits.Args,
		MaxOpenRuns: scheduler.DefaultMaxOpenRuns, MaxWatchers: api.DefaultMaxWatchers, MaxConcurrentStreams: server.DefaultMaxConcurrentStreams,
		MaxChainDepth: api.DefaultMaxChainDepth, MaxChainFanout: api.DefaultMaxChainFanout, MaxBackfillSlots: api.DefaultMaxBackfillSlots,
	}
	if cfg.Limits != want {
		t.Fatalf("defaults %+v, want %+v", cfg.Limits, want)
	}
	t.Setenv("RAFTCRON_MAX_WATCHERS", "7")
	path := writeConfig(t, "max-open-runs: 9\n")
	cfg, err = loadForTest(t, append(minimal, "--max-jobs", "5", "--max-chain-depth", "3", "--config", path)...)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Limits; l.MaxJobs != 5 || l.MaxWatchers != 7 || l.MaxOpenRuns != 9 || l.MaxChainDepth != 3 {
		t.Fatalf("limits %+v, want max-jobs 5 and max-chain-depth 3 (flags), max-watchers 7 (env), max-open-runs 9 (file)", l)
	}
}

// A limit that is not a positive whole number is refused, naming the flag.
func TestServeLimitsRejectBadValues(t *testing.T) {
	for _, v := range []string{"0", "-3", "99999999999"} {
		_, err := loadForTest(t, append(minimal, "--max-headers", v)...)
		if err == nil || !strings.Contains(err.Error(), "--max-headers") || !strings.Contains(err.Error(), "whole number") {
			t.Errorf("--max-headers %s: %v, want an error naming the flag and the rule", v, err)
		}
	}
	t.Setenv("RAFTCRON_MAX_JOBS", "lots")
	if _, err := loadForTest(t, minimal...); err == nil || !strings.Contains(err.Error(), "--max-jobs") {
		t.Errorf("RAFTCRON_MAX_JOBS=lots: %v, want an error naming --max-jobs", err)
	}
}
