package main

import (
	"fmt"
	"slices"
	"time"
)

// config is the whole run's settings; zero scenario parameters take the
// defaults of the mode (full or quick) in withDefaults.
type config struct {
	Bin, Out, Work, Repo string
	Quick, Keep, Profile bool
	Trace                bool
	Seed                 int64
	NodeLogLevel         string
	Scenarios            []string
	// Repeat is how many times each scenario runs (with ABOld: pairs).
	Repeat int
	// ABOld is the old node binary of an A/B comparison; Bin is the new.
	ABOld string

	BurstJobs         int
	SteadyRate        int
	SteadyDuration    time.Duration
	SteadyPeriod      int
	FailoverRounds    int
	RegistryDuration  time.Duration
	IdleDuration      time.Duration
	ScaleJobs         int
	ScaleSnapshotWait time.Duration
	MicroBenchtime    string
	// WarmWorkers has workers-http measure its jobs' second wave.
	WarmWorkers bool
}

// pick returns full or quick by mode.
func pick[T any](quick bool, full, short T) T {
	if quick {
		return short
	}
	return full
}

func (c config) withDefaults() (config, error) {
	if c.BurstJobs == 0 {
		c.BurstJobs = 10_000
	}
	if c.SteadyDuration == 0 {
		c.SteadyDuration = pick(c.Quick, 60*time.Second, 15*time.Second)
	}
	if c.SteadyPeriod == 0 {
		c.SteadyPeriod = pick(c.Quick, 10, 5)
	}
	if c.FailoverRounds == 0 {
		c.FailoverRounds = pick(c.Quick, 20, 3)
	}
	if c.RegistryDuration == 0 {
		c.RegistryDuration = pick(c.Quick, 20*time.Second, 4*time.Second)
	}
	if c.IdleDuration == 0 {
		c.IdleDuration = pick(c.Quick, 60*time.Second, 20*time.Second)
	}
	if c.ScaleJobs == 0 {
		c.ScaleJobs = pick(c.Quick, 1_000_000, 50_000)
	}
	if c.ScaleSnapshotWait < 0 {
		c.ScaleSnapshotWait = pick(c.Quick, 300*time.Second, 0)
	}
	if c.MicroBenchtime == "" {
		c.MicroBenchtime = pick(c.Quick, "1s", "100ms")
	}
	switch {
	case c.BurstJobs < 1:
		return c, fmt.Errorf("-burst-jobs %d: must be at least 1", c.BurstJobs)
	case c.SteadyRate < 1:
		return c, fmt.Errorf("-steady-rate %d: must be at least 1", c.SteadyRate)
	case c.SteadyPeriod < 1 || 60%c.SteadyPeriod != 0:
		return c, fmt.Errorf("-steady-period %d: must divide 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)", c.SteadyPeriod)
	case c.SteadyDuration < time.Second:
		return c, fmt.Errorf("-steady-duration %s: must be at least 1s", c.SteadyDuration)
	case c.FailoverRounds < 1:
		return c, fmt.Errorf("-failover-rounds %d: must be at least 1", c.FailoverRounds)
	case c.RegistryDuration < time.Second:
		return c, fmt.Errorf("-registry-duration %s: must be at least 1s", c.RegistryDuration)
	case c.IdleDuration < time.Second:
		return c, fmt.Errorf("-idle-duration %s: must be at least 1s", c.IdleDuration)
	case c.ScaleJobs < 1:
		return c, fmt.Errorf("-scale-jobs %d: must be at least 1", c.ScaleJobs)
	case c.Repeat < 1:
		return c, fmt.Errorf("-repeat %d: must be at least 1", c.Repeat)
	case c.ABOld != "" && slices.Contains(c.Scenarios, "micro"):
		return c, fmt.Errorf("-ab compares node binaries, and micro runs no node (it benchmarks this tree's packages): leave it out of -scenarios")
	}
	// The steady window covers whole periods, so every job fires equally often.
	p := time.Duration(c.SteadyPeriod) * time.Second
	c.SteadyDuration = (c.SteadyDuration + p - 1) / p * p
	return c, nil
}
