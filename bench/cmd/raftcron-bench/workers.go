package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/worker"
)

const (
	// benchWorkers is how many workers of the pool take the burst.
	benchWorkers = 2
	// workerConcurrency lets each worker take half the burst at once:
	// the handler returns at once, so this bounds nothing but the wait.
	workerConcurrency = 10_000
	workerPool        = "bench"
	workerHandler     = "record"
)

// workerWave is what the workers scenarios measure alike: N jobs due at
// one second, handled by remote workers.
type workerWave struct {
	Jobs         int                `json:"jobs"`
	Workers      int                `json:"workers"`
	Registration harness.LoadResult `json:"registration"`
	Slot         time.Time          `json:"slot"`
	Delivered    int                `json:"delivered"`
	Redeliveries int                `json:"redeliveries"`
	// Lateness is the handler's start − nominal slot time, one per job
	// (the workers run on this machine: one clock).
	Lateness harness.Dist `json:"lateness"`
	// PerWorker is how many first deliveries each worker got.
	PerWorker map[string]int `json:"per_worker"`
}

type workersMetrics struct {
	workerWave
	// WebhookBurst is the burst scenario's lateness of this run, when it
	// ran before: the same tick, delivered by the leader's webhooks.
	WebhookBurst *harness.Dist `json:"webhook_burst_lateness,omitempty"`
	// WebhookFloor is the webhook burst's floor of this run (measured
	// here once the cluster was killed when the burst scenario did not
	// run): what 10,000 handler calls cost with no cluster is not defined,
	// so the webhooks' floor stands beside them. Ratio is Lateness ÷
	// WebhookFloor.Lateness, for comparison only: the target is absolute.
	WebhookFloor      *floorWave         `json:"webhook_burst_floor,omitempty"`
	WebhookFloorError string             `json:"webhook_burst_floor_error,omitempty"`
	Ratio             *ratios            `json:"ratio_to_webhook_floor,omitempty"`
	LeaderHandOver    map[string]float64 `json:"leader_handover_ms"`
	Log               harness.LogSummary `json:"raft_log"`
	// CPU runs from just before the slot until the outcomes settled.
	CPU        cpuWindow `json:"cpu"`
	CPUPerFire *fireCPU  `json:"cpu_us_per_fire"`
}

// handled is one handler call.
type handled struct {
	job, worker string
	slot        int64
	at          time.Time
}

// recorder collects handler calls. It wakes the scenario once, when want
// calls are in: woken at every call, the scenario's goroutine would take
// CPU from the workers it measures.
type recorder struct {
	mu    sync.Mutex
	calls []handled
	want  int
	full  chan struct{} // closed once want calls are in
}

func newRecorder(want int) *recorder {
	return &recorder{want: want, calls: make([]handled, 0, want), full: make(chan struct{})}
}

func (r *recorder) handler(id string) worker.HandlerFunc {
	return func(_ context.Context, run worker.Run) error {
		at := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, handled{job: run.Job, worker: id, slot: run.ScheduledAt.Unix(), at: at})
		if len(r.calls) == r.want {
			close(r.full)
		}
		return nil
	}
}

// runWorkers registers N jobs with a worker target, due in the same
// second, for two SDK workers in this process, and measures how late
// their handlers start: the path is the burst's (one FireBatch per 2000
// fires) plus the offers on the workers' streams.
func runWorkers(ctx context.Context, e *env, res *Result) error {
	n := e.cfg.BurstJobs
	res.Params["jobs"] = n
	res.Params["workers"] = benchWorkers
	m := &workersMetrics{workerWave: workerWave{Jobs: n, Workers: benchWorkers}, WebhookBurst: e.burstLateness}
	res.Metrics = m

	c, leader, err := e.startLed(ctx, "workers")
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	rec := newRecorder(n)
	stop, err := startBenchWorkers(ctx, e, c, rec)
	if err != nil {
		return err
	}
	defer stop()

	var slot time.Time
	if m.Registration, slot, err = registerWorkerWave(ctx, e, leader, n, "workers"); err != nil {
		return err
	}
	m.Slot = slot.UTC()
	if err := sleepUntil(ctx, slot.Add(-500*time.Millisecond)); err != nil {
		return err
	}
	before := sampleNodes(c)
	waitProfile := e.profileNodes(ctx, c, leader, "workers", 8*time.Second)
	waitTrace := e.traceWave(ctx, c, "workers", time.Second)
	wctx, cancel := context.WithDeadline(ctx, slot.Add(burstDeadline))
	select {
	case <-rec.full:
	case <-wctx.Done():
	}
	cancel()

	m.Delivered, m.Redeliveries, m.PerWorker, m.Lateness = tally(rec.snapshot(), slot)
	e.workersLateness = &m.Lateness

	settle(ctx, c, leader)
	after := sampleNodes(c)
	waitProfile()
	waitTrace()
	m.CPU = usage(c, leader, before, after)
	m.CPUPerFire = cpuPerFire(m.CPU, m.Delivered)
	m.LeaderHandOver = latenessHistogram(before, after, leader.ID)
	stop()
	_ = c.Crash()
	if m.Log, err = harness.SummarizeLog(leader.DataDir, before.status[leader.ID].CommitIndex, after.status[leader.ID].CommitIndex); err != nil {
		e.logf("workers: reading the raft log: %v", err)
	}

	if m.WebhookFloor = e.burstFloor; m.WebhookFloor == nil {
		e.logf("workers: measuring the webhook burst's floor (no burst in this run)")
		fw, err := burstFloorAlone(ctx, n)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			m.WebhookFloorError = err.Error()
		} else {
			m.WebhookFloor, e.burstFloor = &fw, &fw
		}
	}
	m.Ratio = ratiosOf(m.Lateness, m.WebhookFloor.lateness())

	res.Summary = fmt.Sprintf("N=%d on %d workers delivered=%d handler lateness p50=%.0fms p99=%.0fms max=%.0fms; webhook %s; %s; split %v; raft entries=%d (fire_batch=%d, complete_batch=%d)",
		n, benchWorkers, m.Delivered, m.Lateness.P50Ms, m.Lateness.P99Ms, m.Lateness.MaxMs,
		floorBrief(m.WebhookFloor.lateness(), m.Ratio), cpuBrief(m.CPUPerFire), m.PerWorker,
		m.Log.Entries, m.Log.FireBatches, m.Log.CompleteBatches)
	if m.WebhookBurst != nil {
		res.Summary += fmt.Sprintf("; webhook burst of this run p50=%.0fms p99=%.0fms", m.WebhookBurst.P50Ms, m.WebhookBurst.P99Ms)
	}
	res.target("p99", fmt.Sprintf("≤ %d ms", workersP99MaxMs), m.Lateness.P99Ms, "ms", m.Delivered == n && m.Lateness.P99Ms <= workersP99MaxMs)
	res.Targets = append(res.Targets, cpuTarget(m.CPUPerFire))
	if m.Delivered != n {
		res.violate("%d of %d worker jobs handled for slot %s within %s", m.Delivered, n, m.Slot.Format(time.RFC3339), burstDeadline)
	}
	if m.Redeliveries > 0 {
		res.violate("%d slots handled twice", m.Redeliveries)
	}
	return nil
}

// registerWorkerWave registers n jobs of the bench pool's handler due at
// one second of the minute, and returns the slot they are due at.
func registerWorkerWave(ctx context.Context, e *env, leader *localcluster.Node, n int, scenario string) (harness.LoadResult, time.Time, error) {
	guess := time.Duration(float64(n)/registerRateGuess*float64(time.Second)) + 4*time.Second
	sec := time.Now().Add(guess).Second()
	schedule := fmt.Sprintf("%d * * * * *", sec)
	e.logf("%s: registering %d worker jobs with schedule %q", scenario, n, schedule)
	reg, err := e.register(ctx, leader, n, func(i int) *pb.JobSpec {
		return &pb.JobSpec{Name: fmt.Sprintf("work-%06d", i), Schedule: schedule,
			Worker: &pb.WorkerTarget{Pool: workerPool, Handler: workerHandler}}
	})
	if err != nil {
		return reg, time.Time{}, err
	}
	slot := nextAtSecond(time.Now().Add(1500*time.Millisecond), sec)
	e.logf("%s: registered at %.0f jobs/s; slot %s (in %s)", scenario, reg.OpsPerSec, slot.Format("15:04:05"), time.Until(slot).Round(time.Millisecond))
	return reg, slot, nil
}

// tally counts each job's first handler call of slot: how many, how many
// calls came again, how many each worker had, and their lateness.
func tally(calls []handled, slot time.Time) (delivered, again int, perWorker map[string]int, lateness harness.Dist) {
	first := map[string]handled{}
	perWorker = map[string]int{}
	for _, h := range calls {
		if h.slot != slot.Unix() {
			continue
		}
		if _, dup := first[h.job]; dup {
			again++
			continue
		}
		first[h.job] = h
		perWorker[h.worker]++
	}
	lat := make([]time.Duration, 0, len(first))
	for _, h := range first {
		lat = append(lat, h.at.Sub(slot))
	}
	return len(first), again, perWorker, harness.Summarize(lat)
}

func (r *recorder) snapshot() []handled {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]handled(nil), r.calls...)
}

// startBenchWorkers runs the workers in this process until stop, and
// waits until each is connected to the leader.
func startBenchWorkers(ctx context.Context, e *env, c *localcluster.Cluster, rec *recorder) (stop func(), err error) {
	addrs := make([]string, 0, len(c.Nodes()))
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.Addr)
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop = func() {
		cancel()
		wg.Wait()
	}
	for i := range benchWorkers {
		id := fmt.Sprintf("bench-w%d", i+1)
		w, err := worker.New(worker.Config{ID: id, Pool: workerPool, Addrs: addrs, Concurrency: workerConcurrency})
		if err != nil {
			stop()
			return nil, err
		}
		if err := w.Handle(workerHandler, rec.handler(id)); err != nil {
			stop()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				e.logf("workers: %s: %v", id, err)
			}
		}()
	}
	leader, err := harness.Leader(ctx, c, harness.ReadyTimeout)
	if err != nil {
		stop()
		return nil, err
	}
	err = harness.Poll(ctx, 30*time.Second, "workers connected", func() (bool, error) {
		m, err := harness.Scrape(leader)
		return err == nil && m.Sum("raftcron_workers_connected") == benchWorkers, nil
	})
	if err != nil {
		stop()
		return nil, errors.Join(err, errors.New("the workers did not connect to the leader"))
	}
	return stop, nil
}
