package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// registerClients is the concurrency of every bulk registration.
const registerClients = 64

// httpJob is a job posting to url on schedule, with every other setting
// at its default (catch-up all within 1m, overlap skip, at_least_once).
func httpJob(name, schedule, url string) *pb.JobSpec {
	return &pb.JobSpec{Name: name, Schedule: schedule, Http: &pb.HttpTarget{Url: url}}
}

// register applies n jobs through the node with registerClients concurrent
// gRPC clients (ApplyJob, so a retried request is harmless).
func (e *env) register(ctx context.Context, via *localcluster.Node, n int, spec func(i int) *pb.JobSpec) (harness.LoadResult, error) {
	conns, err := harness.Dial(via.Addr, min(registerClients, n))
	if err != nil {
		return harness.LoadResult{}, err
	}
	defer harness.CloseAll(conns)
	l := harness.Load{
		Conns: conns, Count: n, Timeout: 30 * time.Second,
		ProgressEvery: 15 * time.Second,
		Progress: func(done int, el time.Duration) {
			e.logf("  registered %d/%d jobs (%.0f/s)", done, n, float64(done)/el.Seconds())
		},
	}
	res, err := l.Run(ctx, func(ctx context.Context, jobs pb.JobServiceClient, i int) error {
		req := &pb.ApplyJobRequest{Spec: spec(i)}
		return harness.Retry(ctx, 10, func() error {
			_, err := jobs.ApplyJob(ctx, req)
			return err
		})
	})
	if err != nil {
		return res, err
	}
	if res.Ops != n {
		return res, fmt.Errorf("registered %d of %d jobs (%d errors; first: %s)", res.Ops, n, res.Errors, res.FirstError)
	}
	return res, nil
}

// nodeSample is every node's /proc reading, /status and /metrics at one
// moment.
type nodeSample struct {
	at time.Time
	// self is this process (the sink and the load generators), sys the
	// whole machine.
	self    harness.ProcSample
	sys     harness.SystemSample
	proc    map[string]harness.ProcSample
	status  map[string]ops.Status
	metrics map[string]harness.Metrics
}

func sampleNodes(c *localcluster.Cluster) nodeSample {
	s := sampleProcs(c)
	for _, n := range c.Nodes() {
		if !n.Running() {
			continue
		}
		if st, err := n.Status(context.Background()); err == nil {
			s.status[n.ID] = st
		}
		if m, err := harness.Scrape(n); err == nil {
			s.metrics[n.ID] = m
		}
	}
	return s
}

// sampleProcs is the part of sampleNodes that reads /proc only, waking
// no node.
func sampleProcs(c *localcluster.Cluster) nodeSample {
	s := nodeSample{at: time.Now(), proc: map[string]harness.ProcSample{},
		status: map[string]ops.Status{}, metrics: map[string]harness.Metrics{}}
	s.self, _ = harness.ReadProc(os.Getpid())
	s.sys, _ = harness.ReadSystem()
	for _, n := range c.Nodes() {
		if !n.Running() {
			continue
		}
		if p, err := harness.ReadProc(n.Pid()); err == nil {
			s.proc[n.ID] = p
		}
	}
	return s
}

// nodeUsage is one node's share of a measured window.
type nodeUsage struct {
	Role string `json:"role"`
	// CPUCores is CPU time / wall time: 1.0 is one core busy.
	CPUCores float64 `json:"cpu_cores"`
	// CPUSeconds is the CPU time the node used in the window.
	CPUSeconds float64 `json:"cpu_s"`
	RSSMB      float64 `json:"rss_mb"`
	PeakMB     float64 `json:"peak_rss_mb"`
	// Entries is how far the node's commit index moved.
	Entries uint64 `json:"raft_entries"`
}

// cpuWindow is where the machine's CPU went during a measured window.
type cpuWindow struct {
	Nodes map[string]nodeUsage `json:"nodes"`
	// BenchCores and BenchSeconds are this program: the webhook sink
	// (the SDK workers in the workers scenario) and gRPC clients.
	BenchCores   float64 `json:"bench_process_cores"`
	BenchSeconds float64 `json:"bench_process_cpu_s"`
	// MachineCores is every process on the machine; OtherCores what is
	// left after the nodes and this program (other work on the box).
	MachineCores float64 `json:"machine_cores"`
	OtherCores   float64 `json:"other_cores"`
	CPUs         int     `json:"cpus"`
}

func usage(c *localcluster.Cluster, leader *localcluster.Node, a, b nodeSample) cpuWindow {
	w := cpuWindow{Nodes: nodeUsages(c, leader, a, b), CPUs: runtime.NumCPU(),
		BenchCores:   round3(harness.CPUShare(a.self, b.self)),
		BenchSeconds: round3((b.self.CPU - a.self.CPU).Seconds()),
		MachineCores: round3(harness.SystemCores(a.sys, b.sys))}
	other := w.MachineCores - w.BenchCores
	for _, u := range w.Nodes {
		other -= u.CPUCores
	}
	w.OtherCores = round3(max(other, 0))
	return w
}

func nodeUsages(c *localcluster.Cluster, leader *localcluster.Node, a, b nodeSample) map[string]nodeUsage {
	out := map[string]nodeUsage{}
	for _, n := range c.Nodes() {
		pa, okA := a.proc[n.ID]
		pz, okB := b.proc[n.ID]
		if !okA || !okB {
			continue
		}
		role := "follower"
		if n == leader {
			role = "leader"
		}
		out[n.ID] = nodeUsage{
			Role: role, CPUCores: round3(harness.CPUShare(pa, pz)), CPUSeconds: round3((pz.CPU - pa.CPU).Seconds()),
			RSSMB: mb(pz.RSS), PeakMB: mb(pz.PeakRSS),
			Entries: b.status[n.ID].CommitIndex - a.status[n.ID].CommitIndex,
		}
	}
	return out
}

// raftTimers are hashicorp/raft's timers that explain a number: disk
// writes (storeLogs includes the fsync), commits, FSM saturation,
// snapshots.
var raftTimers = []string{
	"raftcron_raft_boltdb_storeLogs",
	"raftcron_raft_boltdb_logsPerBatch",
	"raftcron_raft_leader_dispatchLog",
	"raftcron_raft_commitTime",
	"raftcron_raft_fsm_apply",
	"raftcron_raft_fsm_applyBatchNum",
	"raftcron_raft_thread_main_saturation",
	"raftcron_raft_thread_fsm_saturation",
	"raftcron_raft_replication_appendEntries_rpc",
	"raftcron_raft_rpc_appendEntries",
	"raftcron_raft_fsm_snapshot",
	"raftcron_raft_snapshot_persist",
	"raftcron_raft_snapshot_create",
	"raftcron_raft_fsm_restore",
}

// timerDeltas lists the raft timers that moved between a and b on node id.
func timerDeltas(a, b nodeSample, id string) map[string]harness.TimerDelta {
	out := map[string]harness.TimerDelta{}
	ma, mb := a.metrics[id], b.metrics[id]
	if ma == nil || mb == nil {
		return out
	}
	for _, t := range raftTimers {
		if d := harness.Timer(ma, mb, t); d.Count > 0 {
			d.Mean = round3(d.Mean)
			out[t] = d
		}
	}
	return out
}

// latenessHistogram estimates p50/p99 of the leader's own
// raftcron_fire_lateness_seconds (slot time → hand-over to a worker)
// between two samples, in ms.
func latenessHistogram(a, b nodeSample, id string) map[string]float64 {
	ma, mb := a.metrics[id], b.metrics[id]
	if ma == nil || mb == nil {
		return nil
	}
	d := harness.HistogramDelta(ma.Histogram("raftcron_fire_lateness_seconds"), mb.Histogram("raftcron_fire_lateness_seconds"))
	out := map[string]float64{}
	if len(d) == 0 {
		return out
	}
	out["count"] = d[len(d)-1].Count
	for _, q := range []float64{0.5, 0.99} {
		if v := harness.HistogramQuantile(q, d); !math.IsNaN(v) {
			out[fmt.Sprintf("p%d_ms", int(q*100))] = round3(v * 1000)
		}
	}
	return out
}

// profile saves a CPU profile of node over d into the run dir when
// -profile is set; it runs in the background and returns a wait function.
func (e *env) profile(ctx context.Context, n *localcluster.Node, name string, d time.Duration) (wait func()) {
	if !e.cfg.Profile {
		return func() {}
	}
	secs := max(int(d.Seconds()), 1)
	return e.fetchProfile(ctx, n, name+".pprof", fmt.Sprintf("profile?seconds=%d", secs), d)
}

// traceWave saves Go execution traces over d of every node
// (<scenario>-trace-<id>.trace) and of this process (<scenario>-trace-bench.trace)
// when -trace is set: the wave's whole critical path, who waits for whom,
// across the processes sharing the machine.
func (e *env) traceWave(ctx context.Context, c *localcluster.Cluster, scenario string, d time.Duration) (wait func()) {
	if !e.cfg.Trace {
		return func() {}
	}
	waits := []func(){e.traceSelf(filepath.Join(e.runDir, scenario+"-trace-bench.trace"), d)}
	for _, n := range c.Nodes() {
		waits = append(waits, e.fetchProfile(ctx, n, scenario+"-trace-"+n.ID+".trace", fmt.Sprintf("trace?seconds=%g", d.Seconds()), d))
	}
	return func() {
		for _, w := range waits {
			w()
		}
	}
}

// traceSelf writes this process's execution trace over d to path; the
// returned function waits until it is written.
func (e *env) traceSelf(path string, d time.Duration) (wait func()) {
	f, err := os.Create(path)
	if err != nil {
		e.logf("trace %s: %v", path, err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		e.logf("trace %s: %v", path, err)
		_ = f.Close()
		return func() {}
	}
	stopped := make(chan struct{})
	time.AfterFunc(d, func() {
		trace.Stop()
		_ = f.Close()
		close(stopped)
	})
	return func() { <-stopped }
}

// profileNodes saves CPU profiles of the leader and of one follower over d
// (<scenario>-leader-cpu, <scenario>-follower-cpu) when -profile is set.
func (e *env) profileNodes(ctx context.Context, c *localcluster.Cluster, leader *localcluster.Node, scenario string, d time.Duration) (wait func()) {
	waits := []func(){e.profile(ctx, leader, scenario+"-leader-cpu", d)}
	if f := c.Followers(leader); len(f) > 0 {
		waits = append(waits, e.profile(ctx, f[0], scenario+"-follower-cpu", d))
	}
	return func() {
		for _, w := range waits {
			w()
		}
	}
}

// heapProfiles saves the heap profiles of the leader and of one follower
// (<stage>-leader-heap, <stage>-follower-heap) when -profile is set.
func (e *env) heapProfiles(ctx context.Context, c *localcluster.Cluster, leader *localcluster.Node, stage string) {
	e.heapProfile(ctx, leader, stage+"-leader-heap")
	if f := c.Followers(leader); len(f) > 0 {
		e.heapProfile(ctx, f[0], stage+"-follower-heap")
	}
}

// heapProfile saves node's heap profile (after a GC) when -profile is set.
func (e *env) heapProfile(ctx context.Context, n *localcluster.Node, name string) {
	if e.cfg.Profile {
		e.fetchProfile(ctx, n, name+".pprof", "heap?gc=1", 0)()
	}
}

// fetchProfile downloads /debug/pprof/<query> into the run dir in the
// background; the returned function waits for it.
func (e *env) fetchProfile(ctx context.Context, n *localcluster.Node, file, query string, d time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/%s", n.DebugAddr, query)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		client := http.Client{Timeout: d + 30*time.Second}
		resp, err := client.Do(req)
		if err != nil {
			e.logf("profile %s: %v", file, err)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		path := filepath.Join(e.runDir, file)
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer func() { _ = f.Close() }()
		if _, err := io.Copy(f, resp.Body); err == nil {
			e.logf("profile saved: %s", path)
		}
	}()
	return func() { <-done }
}

func mb(b int64) float64 { return round3(float64(b) / (1 << 20)) }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// nextAtSecond is the first whole second at or after t whose second of the
// minute is sec.
func nextAtSecond(t time.Time, sec int) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	for s.Second() != sec {
		s = s.Add(time.Second)
	}
	return s
}

// missedDelta is the change of raftcron_runs_missed_total by reason.
func missedDelta(a, b nodeSample, id string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range b.metrics[id] {
		reason, ok := harness.Label(series, "reason")
		if !ok || harness.SeriesName(series) != "raftcron_runs_missed_total" {
			continue
		}
		if d := v - a.metrics[id][series]; d > 0 {
			out[reason] = d
		}
	}
	return out
}
