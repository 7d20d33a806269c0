package main

import (
	"context"
	"fmt"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// steadyWarmup separates the registration from the measured window.
	steadyWarmup = 5 * time.Second
	// steadyGrace is how long deliveries of the window's last slots may
	// still arrive.
	steadyGrace = 15 * time.Second
)

type steadyMetrics struct {
	Rate         int                `json:"fires_per_s"`
	PeriodS      int                `json:"job_period_s"`
	Jobs         int                `json:"jobs"`
	WindowS      float64            `json:"window_s"`
	Registration harness.LoadResult `json:"registration"`
	Expected     int                `json:"expected"`
	Delivered    int                `json:"delivered"`
	Redeliveries int                `json:"redeliveries"`
	// DeliveredPerSec is the achieved rate over the window.
	DeliveredPerSec float64      `json:"delivered_per_s"`
	Lateness        harness.Dist `json:"lateness"`
	// SlotP99Ms is each second's p99 lateness, in the window's order: a
	// tail that some seconds hold and others do not is a stall (a
	// snapshot, a collection), one every second holds is the wave's cost.
	SlotP99Ms      []float64          `json:"slot_p99_ms"`
	LeaderHandOver map[string]float64 `json:"leader_handover_ms"`
	// LeaderMissed is raftcron_runs_missed_total's change by reason.
	LeaderMissed map[string]float64 `json:"leader_missed"`
	CPU          cpuWindow          `json:"cpu"`
	// CPUPerFire divides CPU by the deliveries received in its window.
	CPUPerFire   *fireCPU                      `json:"cpu_us_per_fire"`
	LeaderRaft   map[string]harness.TimerDelta `json:"leader_raft_timers"`
	FollowerRaft map[string]harness.TimerDelta `json:"follower_raft_timers"`
	// Floor is the same waves for the same window through raftcron's
	// executor with no cluster, measured once this scenario's cluster was
	// killed; Ratio is Lateness ÷ Floor.Lateness.
	Floor      *floorSteady `json:"floor,omitempty"`
	FloorError string       `json:"floor_error,omitempty"`
	Ratio      *ratios      `json:"ratio,omitempty"`
}

// runSteady spreads rate×period jobs over the seconds of their period so
// that rate fires fall due every second, and measures a window of them.
func runSteady(ctx context.Context, e *env, res *Result) error {
	rate, period, window := e.cfg.SteadyRate, e.cfg.SteadyPeriod, e.cfg.SteadyDuration
	m := &steadyMetrics{Rate: rate, PeriodS: period, Jobs: rate * period, WindowS: window.Seconds()}
	m.Expected = rate * int(window/time.Second)
	res.Params["fires_per_s"], res.Params["job_period_s"], res.Params["window_s"] = rate, period, window.Seconds()
	res.Params["jobs"] = m.Jobs
	res.Metrics = m

	sink, err := harness.NewSink()
	if err != nil {
		return err
	}
	defer func() { _ = sink.Close() }()
	c, leader, err := e.startLed(ctx, "steady")
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	e.logf("steady: registering %d jobs (every %ds, %d per second of the period)", m.Jobs, period, rate)
	m.Registration, err = e.register(ctx, leader, m.Jobs, func(i int) *pb.JobSpec {
		return httpJob(fmt.Sprintf("steady-%07d", i), fmt.Sprintf("%d/%d * * * * *", i%period, period), sink.URL())
	})
	if err != nil {
		return err
	}

	w0 := time.Now().Add(steadyWarmup).Truncate(time.Second)
	w1 := w0.Add(window)
	e.logf("steady: window %s–%s", w0.Format("15:04:05"), w1.Format("15:04:05"))
	if err := sleepUntil(ctx, w0.Add(-200*time.Millisecond)); err != nil {
		return err
	}
	before := sampleNodes(c)
	from := sink.Len()
	waitProfile := e.profileNodes(ctx, c, leader, "steady", min(window, 30*time.Second))
	endSample := make(chan nodeSample, 1)
	go func() {
		if sleepUntil(ctx, w1.Add(-200*time.Millisecond)) == nil {
			endSample <- sampleNodes(c)
		}
		close(endSample)
	}()

	type key struct {
		job  string
		slot int64
	}
	first := make(map[key]time.Duration, m.Expected)
	lo, hi := w0.Unix(), w1.Unix()
	sink.Watch(ctx, w1.Add(steadyGrace), from, func(batch []harness.Delivery) bool {
		for _, d := range batch {
			if d.Slot < lo || d.Slot >= hi {
				continue
			}
			k := key{d.Job, d.Slot}
			if _, dup := first[k]; dup {
				m.Redeliveries++
				continue
			}
			first[k] = d.Lateness()
		}
		return len(first) >= m.Expected
	})
	after, ok := <-endSample
	waitProfile()
	if !ok {
		return ctx.Err()
	}
	m.Delivered = len(first)
	m.DeliveredPerSec = round3(float64(m.Delivered) / window.Seconds())
	lat := make([]time.Duration, 0, len(first))
	bySlot := make([][]time.Duration, hi-lo)
	for k, l := range first {
		lat = append(lat, l)
		bySlot[k.slot-lo] = append(bySlot[k.slot-lo], l)
	}
	m.Lateness = harness.Summarize(lat)
	for _, s := range bySlot {
		m.SlotP99Ms = append(m.SlotP99Ms, harness.Summarize(s).P99Ms)
	}
	m.CPU = usage(c, leader, before, after)
	m.CPUPerFire = cpuPerFire(m.CPU, receivedBetween(sink.Since(from), before.at, after.at))
	m.LeaderHandOver = latenessHistogram(before, after, leader.ID)
	m.LeaderMissed = missedDelta(before, after, leader.ID)
	m.LeaderRaft = timerDeltas(before, after, leader.ID)
	if f := c.Followers(leader); len(f) > 0 {
		m.FollowerRaft = timerDeltas(before, after, f[0].ID)
	}
	_ = c.Crash()

	secs := int(window / time.Second)
	e.logf("steady: measuring the floor (the same waves for %ds with no cluster)", secs)
	if fs, err := steadyFloor(ctx, sink, rate, secs); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.FloorError = err.Error()
	} else {
		m.Floor = &fs
	}
	floor := m.Floor.lateness()
	m.Ratio = ratiosOf(m.Lateness, floor)

	res.Summary = fmt.Sprintf("%d fires/s × %.0fs (%d jobs): delivered=%d/%d lateness p50=%.0fms p99=%.0fms max=%.0fms; %s; %s",
		rate, window.Seconds(), m.Jobs, m.Delivered, m.Expected, m.Lateness.P50Ms, m.Lateness.P99Ms, m.Lateness.MaxMs,
		floorBrief(floor, m.Ratio), cpuBrief(m.CPUPerFire))
	res.Targets = append(res.Targets, latenessTargets(m.Lateness, m.Delivered == m.Expected, steadyP99MaxMs, floor)...)
	res.Targets = append(res.Targets, cpuTarget(m.CPUPerFire))
	res.target("delivered", "all fires of the window", float64(m.Delivered), "fires", m.Delivered == m.Expected)
	return nil
}

// receivedBetween counts the deliveries the sink received in [from, to).
func receivedBetween(ds []harness.Delivery, from, to time.Time) int {
	n := 0
	for _, d := range ds {
		if !d.Recv.Before(from) && d.Recv.Before(to) {
			n++
		}
	}
	return n
}
