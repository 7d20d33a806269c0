package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
)

// An idle cluster's CPU is a fixed cost of every measured window: over a
// 1,000 burst's window of about 1.7 s it is a fifth to a third of the CPU
// per fire. On a virtual machine each wake-up of an idle process costs
// 0.1–0.2 ms, so what counts is how often each node wakes, not what it
// does then.

// idleSettle lets the election's entries and the first heartbeats pass
// before the window (-idle-duration).
const idleSettle = 5 * time.Second

// idleMetrics is the idle scenario: a three-node cluster with no job.
type idleMetrics struct {
	WindowS float64   `json:"window_s"`
	CPU     cpuWindow `json:"cpu"`
	// CPU time per second of wall time: the three nodes, the leader, the
	// followers' mean.
	NodesMsPerS    float64 `json:"nodes_cpu_ms_per_s"`
	LeaderMsPerS   float64 `json:"leader_cpu_ms_per_s"`
	FollowerMsPerS float64 `json:"follower_cpu_ms_per_s"`
}

func (m *idleMetrics) figures() []figure {
	var l figureList
	l.add("CPU per second, nodes", "ms", harness.Lower, m.NodesMsPerS)
	l.add("CPU per second, leader", "ms", harness.Lower, m.LeaderMsPerS)
	l.add("CPU per second, follower (mean)", "ms", harness.Lower, m.FollowerMsPerS)
	return l
}

// runIdle counts the CPU of a fresh cluster that has nothing to do. Only
// /proc is read inside the window: a call to a node would wake it.
func runIdle(ctx context.Context, e *env, res *Result) error {
	m := &idleMetrics{}
	res.Metrics = m
	c, leader, err := e.startLed(ctx, "idle")
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	if err := sleepUntil(ctx, time.Now().Add(idleSettle)); err != nil {
		return err
	}
	window := e.cfg.IdleDuration
	m.WindowS = window.Seconds()
	waitProfile := e.profile(ctx, leader, "idle-leader-cpu", window)
	before := sampleProcs(c)
	if err := sleepUntil(ctx, time.Now().Add(window)); err != nil {
		return err
	}
	after := sampleProcs(c)
	waitProfile()
	m.CPU = usage(c, leader, before, after)
	m.idleRates(window)
	res.Summary = fmt.Sprintf("nodes %.1f ms of CPU per second (leader %.1f, followers %.1f each) over %s",
		m.NodesMsPerS, m.LeaderMsPerS, m.FollowerMsPerS, window)
	return nil
}

func (m *idleMetrics) idleRates(window time.Duration) {
	perS := func(cpuS float64) float64 { return math.Round(cpuS*1e4/window.Seconds()) / 10 }
	var nodesS float64
	var followers []float64
	for _, u := range m.CPU.Nodes {
		nodesS += u.CPUSeconds
		if u.Role == "leader" {
			m.LeaderMsPerS = perS(u.CPUSeconds)
		} else {
			followers = append(followers, perS(u.CPUSeconds))
		}
	}
	m.NodesMsPerS = perS(nodesS)
	if len(followers) > 0 {
		m.FollowerMsPerS = math.Round(mean(followers)*10) / 10
	}
}
