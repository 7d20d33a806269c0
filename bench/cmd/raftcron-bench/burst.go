package main

import (
	"context"
	"fmt"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// registerRateGuess (jobs/s) places the burst's slot after the
	// registration; a slower registration moves the burst a minute later.
	registerRateGuess = 1500
	// burstDeadline bounds the wait for every delivery after the slot.
	burstDeadline = 120 * time.Second
	// settleTimeout bounds the wait for the outcomes to be committed.
	settleTimeout = 60 * time.Second
	// settlePoll spaces the settle's questions to the nodes, which fall
	// inside the CPU window: at 20 ms they woke idle nodes 50 times a
	// second, each wake-up 0.1–0.2 ms of CPU.
	settlePoll = 100 * time.Millisecond
)

type burstMetrics struct {
	Jobs         int                `json:"jobs"`
	Registration harness.LoadResult `json:"registration"`
	Slot         time.Time          `json:"slot"`
	Delivered    int                `json:"delivered"`
	// Redeliveries are extra deliveries of a slot already delivered.
	Redeliveries int `json:"redeliveries"`
	// Lateness is sink receive time − nominal slot time, one per job.
	Lateness harness.Dist `json:"lateness"`
	// LeaderHandOver is the leader's raftcron_fire_lateness_seconds
	// (slot → hand-over to a worker), estimated from its buckets.
	LeaderHandOver map[string]float64 `json:"leader_handover_ms"`
	// Log is what the leader's Raft log holds from just before the slot
	// until the outcomes settled.
	Log harness.LogSummary `json:"raft_log"`
	// FirstMs is slot → first delivery (plan + commit of the first
	// entry); SpanMs first → last delivery; DispatchPerSec N/span.
	FirstMs float64 `json:"first_delivery_ms"`
	// TickStartMs is slot → the leader's tick that proposed the burst
	// (the FireBatch's proposed_at stamp).
	TickStartMs    float64 `json:"tick_start_ms"`
	SpanMs         float64 `json:"delivery_span_ms"`
	DispatchPerSec float64 `json:"dispatch_per_s"`
	// CPU runs from just before the slot until the outcomes settled, so
	// CPUPerFire holds the whole cost of each fire.
	CPU        cpuWindow `json:"cpu"`
	CPUPerFire *fireCPU  `json:"cpu_us_per_fire"`
	// Floor is the same wave through raftcron's executor with no cluster,
	// measured once this scenario's cluster was killed; Ratio is
	// Lateness ÷ Floor.Lateness.
	Floor        *floorWave                    `json:"floor,omitempty"`
	FloorError   string                        `json:"floor_error,omitempty"`
	Ratio        *ratios                       `json:"ratio,omitempty"`
	LeaderRaft   map[string]harness.TimerDelta `json:"leader_raft_timers"`
	FollowerRaft map[string]harness.TimerDelta `json:"follower_raft_timers"`
	// Features (burst-features) are the job features the jobs used, and
	// why the others were left out.
	Features *featureReport `json:"features,omitempty"`
	// Chained (burst-features) are the jobs chained after some of the
	// burst's, and their deliveries.
	Chained *chainedFires `json:"chained,omitempty"`
}

// chainedFires are the deliveries of the jobs chained after the burst's.
type chainedFires struct {
	Jobs      int `json:"jobs"`
	Delivered int `json:"delivered"`
	// Delay is a child's delivery − its parent's, one per child whose
	// parent was delivered.
	Delay harness.Dist `json:"parent_to_child"`
}

// chainedJob is a job chained after one of the burst's: it is delivered
// once its parent is.
type chainedJob struct {
	spec   *pb.JobSpec
	parent string
}

// burstVariant is what a burst registers and how its nodes run.
type burstVariant struct {
	// name is the scenario's: its cluster's directory and its log lines.
	name string
	// flags are the nodes' serve flags besides the cluster's own.
	flags []string
	// setUp, if set, runs once the cluster has a leader, before the
	// slot is chosen, and returns the jobs to register after the burst's.
	setUp func(ctx context.Context, c *localcluster.Cluster, leader *localcluster.Node, url string, m *burstMetrics) (children []chainedJob, err error)
	// job is job i of the burst, due on schedule, posting to url.
	job func(i int, schedule, url string) *pb.JobSpec
	// besideWorkers: the workers scenario of the same run shows this
	// burst's lateness and floor beside its own.
	besideWorkers bool
}

// plainBurst is the burst scenario: jobs with every setting at its default.
var plainBurst = burstVariant{
	name: "burst",
	job: func(i int, schedule, url string) *pb.JobSpec {
		return httpJob(fmt.Sprintf("burst-%06d", i), schedule, url)
	},
	besideWorkers: true,
}

// runBurst registers N jobs due in the same second and measures how late
// their webhooks reach the sink, and how many Raft entries the tick used.
func runBurst(ctx context.Context, e *env, res *Result) error {
	return runBurstVariant(ctx, e, res, plainBurst)
}

// runBurstVariant is a burst of v's jobs. Jobs registered after the
// burst's (v.setUp) are waited for too, their CPU is counted per fire, and
// their deliveries stay out of the burst's lateness.
func runBurstVariant(ctx context.Context, e *env, res *Result, v burstVariant) error {
	n := e.cfg.BurstJobs
	res.Params["jobs"] = n
	m := &burstMetrics{Jobs: n}
	res.Metrics = m

	sink, err := harness.NewSink()
	if err != nil {
		return err
	}
	defer func() { _ = sink.Close() }()
	c, leader, err := e.startLed(ctx, v.name, v.flags...)
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	var children []chainedJob
	if v.setUp != nil {
		if children, err = v.setUp(ctx, c, leader, sink.URL(), m); err != nil {
			return err
		}
	}

	guess := time.Duration(float64(n+len(children))/registerRateGuess*float64(time.Second)) + 4*time.Second
	sec := time.Now().Add(guess).Second()
	schedule := fmt.Sprintf("%d * * * * *", sec)
	e.logf("%s: registering %d jobs with schedule %q", v.name, n, schedule)
	m.Registration, err = e.register(ctx, leader, n, func(i int) *pb.JobSpec {
		return v.job(i, schedule, sink.URL())
	})
	if err != nil {
		return err
	}
	parents := map[string]string{} // chained job → the job it follows
	if len(children) > 0 {
		e.logf("%s: registering %d jobs chained after them", v.name, len(children))
		if _, err := e.register(ctx, leader, len(children), func(i int) *pb.JobSpec { return children[i].spec }); err != nil {
			return err
		}
		for _, ch := range children {
			parents[ch.spec.GetName()] = ch.parent
		}
		m.Chained = &chainedFires{Jobs: len(children)}
	}
	// A job created during second s has its cursor at s: its first slot
	// is after s. So the slot must start after the registration's second.
	slot := nextAtSecond(time.Now().Add(1500*time.Millisecond), sec)
	m.Slot = slot.UTC()
	e.logf("%s: registered at %.0f jobs/s; slot %s (in %s)", v.name, m.Registration.OpsPerSec, slot.Format("15:04:05"), time.Until(slot).Round(time.Millisecond))

	e.heapProfiles(ctx, c, leader, v.name+"-registered")
	if err := sleepUntil(ctx, slot.Add(-500*time.Millisecond)); err != nil {
		return err
	}
	before := sampleNodes(c)
	from := sink.Len()
	waitProfile := e.profileNodes(ctx, c, leader, v.name, 8*time.Second)

	first := make(map[string]harness.Delivery, n)
	chained := make(map[string]harness.Delivery, len(parents))
	slotUnix := slot.Unix()
	sink.Watch(ctx, slot.Add(burstDeadline), from, func(batch []harness.Delivery) bool {
		for _, d := range batch {
			if _, ok := parents[d.Job]; ok {
				if _, dup := chained[d.Job]; !dup {
					chained[d.Job] = d
				}
				continue
			}
			if d.Slot != slotUnix {
				continue
			}
			if _, dup := first[d.Job]; dup {
				m.Redeliveries++
				continue
			}
			first[d.Job] = d
		}
		return len(first) >= n && len(chained) >= len(parents)
	})
	m.Delivered = len(first)
	lat := make([]time.Duration, 0, len(first))
	for _, d := range first {
		lat = append(lat, d.Lateness())
	}
	m.Lateness = harness.Summarize(lat)
	if v.besideWorkers {
		e.burstLateness = &m.Lateness
	}
	if m.Chained != nil {
		m.Chained.Delivered, m.Chained.Delay = len(chained), chainDelays(chained, first, parents)
	}
	if len(lat) > 0 {
		m.FirstMs = m.Lateness.MinMs
		m.SpanMs = round3(m.Lateness.MaxMs - m.Lateness.MinMs)
		if m.SpanMs > 0 {
			m.DispatchPerSec = round3(float64(len(lat)) / (m.SpanMs / 1000))
		}
	}

	settle(ctx, c, leader)
	after := sampleNodes(c)
	waitProfile()
	e.heapProfiles(ctx, c, leader, v.name+"-fired")
	m.CPU = usage(c, leader, before, after)
	m.CPUPerFire = cpuPerFire(m.CPU, m.Delivered+len(chained))
	m.LeaderHandOver = latenessHistogram(before, after, leader.ID)
	m.LeaderRaft = timerDeltas(before, after, leader.ID)
	if f := c.Followers(leader); len(f) > 0 {
		m.FollowerRaft = timerDeltas(before, after, f[0].ID)
	}

	_ = c.Crash() // the Raft store can only be read once the process is gone
	if m.Log, err = harness.SummarizeLog(leader.DataDir, before.status[leader.ID].CommitIndex, after.status[leader.ID].CommitIndex); err != nil {
		e.logf("%s: reading the raft log: %v", v.name, err)
	}
	if !m.Log.FirstFireBatchAt.IsZero() {
		m.TickStartMs = harness.Ms(m.Log.FirstFireBatchAt.Sub(slot))
	}

	e.logf("%s: measuring the floor (the same wave with no cluster)", v.name)
	if fw, err := burstFloor(ctx, sink, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.FloorError = err.Error()
	} else {
		m.Floor = &fw
		if v.besideWorkers {
			e.burstFloor = &fw
		}
	}
	floor := m.Floor.lateness()
	m.Ratio = ratiosOf(m.Lateness, floor)

	res.Summary = fmt.Sprintf("N=%d delivered=%d lateness p50=%.0fms p99=%.0fms max=%.0fms; %s; %s; raft entries=%d (fire_batch=%d, complete_batch=%d)",
		n, m.Delivered, m.Lateness.P50Ms, m.Lateness.P99Ms, m.Lateness.MaxMs, floorBrief(floor, m.Ratio), cpuBrief(m.CPUPerFire),
		m.Log.Entries, m.Log.FireBatches, m.Log.CompleteBatches)
	if m.Chained != nil {
		res.Summary += fmt.Sprintf("; chained delivered=%d/%d parent→child p50=%.0fms p99=%.0fms",
			m.Chained.Delivered, m.Chained.Jobs, m.Chained.Delay.P50Ms, m.Chained.Delay.P99Ms)
	}
	if m.Features != nil {
		res.Summary += "; " + m.Features.brief()
	}
	res.Targets = append(res.Targets, latenessTargets(m.Lateness, m.Delivered == n, burstP99MaxMs, floor)...)
	res.Targets = append(res.Targets, cpuTarget(m.CPUPerFire))
	if m.Chained == nil {
		// The scheduler's entries: a small first one (250 fires) so the
		// first deliveries start early, then up to 2,000 each. Chained
		// fires come in entries of their own.
		maxBatches := 1 + (max(n-250, 0)+1999)/2000
		res.target("fire_batch_entries", fmt.Sprintf("≤ %d", maxBatches), float64(m.Log.FireBatches), "entries", m.Log.FireBatches <= maxBatches)
	}
	if m.Delivered != n {
		res.violate("%d of %d jobs delivered for slot %s within %s", m.Delivered, n, m.Slot.Format(time.RFC3339), burstDeadline)
	}
	if m.Chained != nil && m.Chained.Delivered != m.Chained.Jobs {
		res.violate("%d of %d chained jobs delivered within %s of the slot", m.Chained.Delivered, m.Chained.Jobs, burstDeadline)
	}
	return nil
}

// chainDelays are each chained job's delivery − its parent's.
func chainDelays(chained, first map[string]harness.Delivery, parents map[string]string) harness.Dist {
	d := make([]time.Duration, 0, len(chained))
	for job, c := range chained {
		if p, ok := first[parents[job]]; ok {
			d = append(d, c.Recv.Sub(p.Recv))
		}
	}
	return harness.Summarize(d)
}

// settle waits until the leader has no attempt in flight and its commit
// index has stopped moving for a second (the outcomes are committed), and
// then until every node has applied that index: a follower learns of the
// last commits only with Raft's next AppendEntries, up to twice
// CommitTimeout later, and its applies belong in the CPU window. It asks
// every settlePoll: its questions are inside the window it measures.
func settle(ctx context.Context, c *localcluster.Cluster, leader *localcluster.Node) {
	var last uint64
	stableSince := time.Now()
	_ = harness.PollEvery(ctx, settleTimeout, settlePoll, "outcomes committed", func() (bool, error) {
		st, err := leader.Status(context.Background())
		if err != nil {
			return false, nil
		}
		if st.CommitIndex != last {
			last, stableSince = st.CommitIndex, time.Now()
			return false, nil
		}
		if time.Since(stableSince) < time.Second {
			return false, nil
		}
		m, err := harness.Scrape(leader)
		return err == nil && m.Sum("raftcron_runs_in_flight") == 0, nil
	})
	_ = harness.WaitCaughtUpEvery(ctx, c, last, settleTimeout, settlePoll)
}
