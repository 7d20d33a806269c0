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
	// targetJobs is the registry size of the DESIGN §13 scale targets
	// (scaleRSSMaxMB, scaleReadyMaxMs).
	targetJobs = 1_000_000
	// scaleMemoryLimit is what README.md has an operator set for that
	// budget: 1.5 GiB less the ~0.5 GiB of Raft log file that bbolt maps
	// into memory after a bulk load of a million jobs, which the Go
	// runtime does not count. Without it the collector lets the heap grow
	// to twice the live data.
	scaleMemoryLimit = "1GiB"
	// raftSnapshotThreshold is hashicorp/raft's default SnapshotThreshold:
	// a snapshot is taken only once this many entries follow the last one.
	raftSnapshotThreshold = 8192
	// scaleIdleWindow is how long the idle CPU is measured.
	scaleIdleFull, scaleIdleQuick = 30 * time.Second, 10 * time.Second
	// catchUpTimeout bounds the followers' catching up after a bulk load.
	catchUpTimeout = 5 * time.Minute
	// The registry is loaded with ApplyJobs calls of scaleBatch jobs from
	// scaleClients clients: bulk registration as an operator would run it.
	scaleBatch   = 500
	scaleClients = 16
)

type scaleMetrics struct {
	Jobs         int          `json:"jobs"`
	Registration registration `json:"registration"`
	// AfterLoad is every node's memory once all jobs are applied.
	AfterLoad map[string]nodeMemory `json:"after_load"`
	// RaftSnapshot is the newest snapshot each node's Raft kept, and
	// whether it covers (almost) the whole registry.
	RaftSnapshot map[string]snapshotOnDisk `json:"raft_snapshot"`
	// LeaderSnapshotTimers are the leader's snapshot timers over the
	// whole scenario (every snapshot Raft took during the load).
	LeaderSnapshotTimers map[string]harness.TimerDelta `json:"leader_raft_timers_whole_run"`
	// Idle is CPU with the registry loaded and nothing due.
	IdleWindowS float64   `json:"idle_window_s"`
	Idle        cpuWindow `json:"idle"`
	// PeakRSSMB is each node's highest RSS (VmHWM) from its start to the
	// end of the idle window: the load, Raft's snapshot and compaction.
	// The target is judged on it.
	PeakRSSMB map[string]float64 `json:"peak_rss_mb_whole_run"`
	// Restart: a follower stopped gracefully and started again.
	Restart restartResult `json:"restart"`
	// ProjectedRSSMB (runs below targetJobs only) extrapolates each node's
	// RSS linearly to targetJobs from its growth during the load.
	ProjectedRSSMB map[string]float64 `json:"projected_rss_mb_at_1M,omitempty"`
	// FSMSnapshot is the in-process measurement of the same registry.
	FSMSnapshot *harness.FSMSnapshotResult `json:"fsm_snapshot_in_process,omitempty"`
}

// registration is a batched bulk load: the load's ops are ApplyJobs calls.
type registration struct {
	harness.LoadResult
	Batch      int     `json:"batch"`
	JobsPerSec float64 `json:"jobs_per_sec"`
}

type nodeMemory struct {
	Role        string  `json:"role"`
	RSSMB       float64 `json:"rss_mb"`
	PeakMB      float64 `json:"peak_rss_mb"`
	GoHeapMB    float64 `json:"go_heap_inuse_mb"`
	AppliedJobs float64 `json:"jobs"`
}

type snapshotOnDisk struct {
	harness.SnapshotInfo
	MB float64 `json:"mb"`
	// CoversAll: no more than Raft's threshold of entries follow it.
	CoversAll bool `json:"covers_all"`
}

type restartResult struct {
	Node          string                        `json:"node"`
	ReadyMs       float64                       `json:"ready_ms"`
	RSSMB         float64                       `json:"rss_mb_after"`
	RestoreTimers map[string]harness.TimerDelta `json:"timers"`
}

// scaleSpec is job i of the scale scenario: a daily schedule at a minute
// and hour that are never due during the run (the hours from 3 to 20 hours
// from now), so the numbers are the registry's, not the fires'.
func scaleSpec(startHour int) func(i int) *pb.JobSpec {
	return func(i int) *pb.JobSpec {
		hour := (startHour + 3 + (i/60)%18) % 24
		return &pb.JobSpec{
			Name:     fmt.Sprintf("scale-%07d", i),
			Schedule: fmt.Sprintf("%d %d * * *", i%60, hour),
			Http:     &pb.HttpTarget{Url: "http://127.0.0.1:9/never"},
			Labels:   map[string]string{"team": fmt.Sprintf("t%02d", i%50)},
		}
	}
}

// runScale registers N jobs and measures memory, snapshots, idle CPU and a
// restart with them.
func runScale(ctx context.Context, e *env, res *Result) error {
	n := e.cfg.ScaleJobs
	res.Params["jobs"] = n
	res.Params["snapshot_wait_s"] = e.cfg.ScaleSnapshotWait.Seconds()
	m := &scaleMetrics{Jobs: n}
	res.Metrics = m
	spec := scaleSpec(time.Now().UTC().Hour())

	res.Params["memory_limit"] = scaleMemoryLimit
	c, leader, err := e.startLed(ctx, "scale", "--memory-limit", scaleMemoryLimit)
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	start := sampleNodes(c)
	e.logf("scale: registering %d jobs with %d clients in ApplyJobs calls of %d", n, scaleClients, scaleBatch)
	waitProfile := e.profile(ctx, leader, "scale-register-leader-cpu", 20*time.Second)
	if m.Registration, err = e.registerBatched(ctx, leader, n, spec); err != nil {
		return err
	}
	waitProfile()
	e.logf("scale: %d jobs in %.0fs (%.0f/s)", n, m.Registration.ElapsedS, m.Registration.JobsPerSec)
	st, err := leader.Status(context.Background())
	if err != nil {
		return err
	}
	if err := harness.WaitCaughtUp(ctx, c, st.CommitIndex, catchUpTimeout); err != nil {
		return err
	}
	m.AfterLoad = memory(c, leader)
	e.heapProfiles(ctx, c, leader, "scale")

	if w := e.cfg.ScaleSnapshotWait; w > 0 {
		e.logf("scale: waiting up to %s for Raft's snapshot of the whole registry", w)
		_ = harness.Poll(ctx, w, "a snapshot of the whole registry", func() (bool, error) {
			info, ok, _ := harness.LatestSnapshot(leader.DataDir)
			return ok && info.Index+raftSnapshotThreshold >= st.CommitIndex, nil
		})
	}
	m.RaftSnapshot = snapshots(c, st.CommitIndex)

	idle := pick(e.cfg.Quick, scaleIdleFull, scaleIdleQuick)
	m.IdleWindowS = idle.Seconds()
	waitProfile = e.profile(ctx, leader, "scale-idle-leader-cpu", idle)
	before := sampleNodes(c)
	if err := sleepUntil(ctx, time.Now().Add(idle)); err != nil {
		return err
	}
	after := sampleNodes(c)
	waitProfile()
	m.Idle = usage(c, leader, before, after)
	m.PeakRSSMB = peakRSS(m.AfterLoad, after)
	m.LeaderSnapshotTimers = timerDeltas(start, after, leader.ID)

	if m.Restart, err = restartFollower(ctx, c, leader); err != nil {
		return err
	}
	_ = c.Crash()

	e.logf("scale: measuring the FSM's snapshot of %d jobs in process", n)
	fs, err := harness.MeasureFSMSnapshot(n, e.workDir, spec)
	if err != nil {
		e.logf("scale: in-process snapshot: %v", err)
	} else {
		m.FSMSnapshot = &fs
	}

	lm := m.AfterLoad[leader.ID]
	maxRSS := 0.0
	for _, peak := range m.PeakRSSMB {
		maxRSS = max(maxRSS, peak)
	}
	snap := m.RaftSnapshot[leader.ID]
	res.Summary = fmt.Sprintf("N=%d registered at %.0f/s; RSS leader=%.0fMB after the load, peak of any node %.0fMB; raft snapshot %.0fMB (index %d); restart→ready %.1fs; idle cpu leader=%.3f cores",
		n, m.Registration.JobsPerSec, lm.RSSMB, maxRSS, snap.MB, snap.Index, m.Restart.ReadyMs/1000, m.Idle.Nodes[leader.ID].CPUCores)
	if t, ok := m.LeaderSnapshotTimers["raftcron_raft_snapshot_persist"]; ok {
		res.Summary += fmt.Sprintf(" (persist %.0fms)", t.Mean)
	}
	if fs.Bytes > 0 {
		res.Summary += fmt.Sprintf("; fsm snapshot in-process %.0fMB persist %.0fms restore %.0fms", mb(fs.Bytes), fs.PersistMs, fs.RestoreMs)
	}
	if n >= targetJobs {
		res.target("rss_per_node", "≤ 1.5 GiB", maxRSS, "MB", maxRSS <= scaleRSSMaxMB)
		res.target("restart_to_ready", "≤ 5 s", m.Restart.ReadyMs/1000, "s", m.Restart.ReadyMs <= scaleReadyMaxMs)
		return nil
	}
	// Below the target size, project memory linearly from what the jobs
	// added to each node, and say so in the target's name.
	m.ProjectedRSSMB = projectRSS(start, m.AfterLoad, n)
	worst := 0.0
	for _, v := range m.ProjectedRSSMB {
		worst = max(worst, v)
	}
	res.target("rss_per_node_projected_to_1M", "≤ 1.5 GiB", worst, "MB", worst <= scaleRSSMaxMB)
	res.target(fmt.Sprintf("restart_to_ready_at_%d_jobs", n), "≤ 5 s (at 1M)", m.Restart.ReadyMs/1000, "s", m.Restart.ReadyMs <= scaleReadyMaxMs)
	return nil
}

// registerBatched applies jobs 0..n-1 through the node in ApplyJobs calls
// of scaleBatch, scaleClients calls at a time; a call refused as a whole or
// in part (no leader, a leader change) is retried whole.
func (e *env) registerBatched(ctx context.Context, via *localcluster.Node, n int, spec func(i int) *pb.JobSpec) (registration, error) {
	calls := (n + scaleBatch - 1) / scaleBatch
	r := registration{Batch: scaleBatch}
	conns, err := harness.Dial(via.Addr, max(min(scaleClients, calls), 1))
	if err != nil {
		return r, err
	}
	defer harness.CloseAll(conns)
	l := harness.Load{
		Conns: conns, Count: calls, Timeout: time.Minute,
		ProgressEvery: 15 * time.Second,
		Progress: func(done int, el time.Duration) {
			jobs := min(done*scaleBatch, n)
			e.logf("  registered %d/%d jobs (%.0f/s)", jobs, n, float64(jobs)/el.Seconds())
		},
	}
	r.LoadResult, err = l.Run(ctx, func(ctx context.Context, jobs pb.JobServiceClient, i int) error {
		lo, hi := i*scaleBatch, min((i+1)*scaleBatch, n)
		specs := make([]*pb.JobSpec, 0, hi-lo)
		for k := lo; k < hi; k++ {
			specs = append(specs, spec(k))
		}
		return harness.Retry(ctx, 10, func() error { return applyAll(ctx, jobs, specs) })
	})
	if err != nil {
		return r, err
	}
	if r.Ops != calls {
		return r, fmt.Errorf("registered %d of %d batches (%d errors; first: %s)", r.Ops, calls, r.Errors, r.FirstError)
	}
	r.JobsPerSec = round3(float64(n) / r.ElapsedS)
	return r, nil
}

func memory(c *localcluster.Cluster, leader *localcluster.Node) map[string]nodeMemory {
	s := sampleNodes(c)
	out := map[string]nodeMemory{}
	for _, n := range c.Nodes() {
		p, ok := s.proc[n.ID]
		if !ok {
			continue
		}
		role := "follower"
		if n == leader {
			role = "leader"
		}
		met := s.metrics[n.ID]
		out[n.ID] = nodeMemory{Role: role, RSSMB: mb(p.RSS), PeakMB: mb(p.PeakRSS),
			GoHeapMB: mb(int64(met.Sum("go_memstats_heap_inuse_bytes"))), AppliedJobs: met.Sum("raftcron_jobs")}
	}
	return out
}

func snapshots(c *localcluster.Cluster, commit uint64) map[string]snapshotOnDisk {
	out := map[string]snapshotOnDisk{}
	for _, n := range c.Nodes() {
		if info, ok, err := harness.LatestSnapshot(n.DataDir); err == nil && ok {
			out[n.ID] = snapshotOnDisk{SnapshotInfo: info, MB: mb(info.Bytes), CoversAll: info.Index+raftSnapshotThreshold >= commit}
		}
	}
	return out
}

// restartFollower stops a follower gracefully, starts it again and times
// it to /readyz 200.
func restartFollower(ctx context.Context, c *localcluster.Cluster, leader *localcluster.Node) (restartResult, error) {
	fs := c.Followers(leader)
	if len(fs) == 0 {
		return restartResult{}, fmt.Errorf("no follower to restart")
	}
	f := fs[0]
	r := restartResult{Node: f.ID}
	harness.Stop(f)
	if err := c.Restart(f.ID); err != nil {
		return r, err
	}
	ready, err := harness.WaitReady(ctx, f, 5*time.Minute)
	if err != nil {
		return r, err
	}
	r.ReadyMs = harness.Ms(ready)
	if p, err := harness.ReadProc(f.Pid()); err == nil {
		r.RSSMB = mb(p.RSS)
	}
	if met, err := harness.Scrape(f); err == nil {
		r.RestoreTimers = timerDeltas(nodeSample{metrics: map[string]harness.Metrics{f.ID: {}}},
			nodeSample{metrics: map[string]harness.Metrics{f.ID: met}}, f.ID)
	}
	return r, nil
}

// peakRSS is each node's VmHWM as of the sample, or after the load if the
// sample missed the node.
func peakRSS(afterLoad map[string]nodeMemory, s nodeSample) map[string]float64 {
	out := make(map[string]float64, len(afterLoad))
	for id, mem := range afterLoad {
		out[id] = mem.PeakMB
		if p, ok := s.proc[id]; ok {
			out[id] = max(out[id], mb(p.PeakRSS))
		}
	}
	return out
}

// projectRSS extrapolates each node's RSS to targetJobs: its RSS before the
// load plus the growth per job times targetJobs.
func projectRSS(start nodeSample, after map[string]nodeMemory, n int) map[string]float64 {
	out := map[string]float64{}
	for id, mem := range after {
		base, ok := start.proc[id]
		if !ok || n == 0 {
			continue
		}
		perJob := (mem.RSSMB - mb(base.RSS)) / float64(n)
		out[id] = round3(mb(base.RSS) + perJob*targetJobs)
	}
	return out
}
