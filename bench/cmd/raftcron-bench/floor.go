package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/dispatch"
)

// floorMetrics is the lateness of the burst's and the steady scenario's
// webhook waves with nothing but the HTTP in the way: raftcron's own
// executor and worker pool, in this process, posting into the same sink.
// No Raft, no planning, no FSM: the best any scheduler could do here.
type floorMetrics struct {
	Workers int         `json:"workers"`
	Burst   floorWave   `json:"burst"`
	Steady  floorSteady `json:"steady"`
}

type floorWave struct {
	Requests int          `json:"requests"`
	Lateness harness.Dist `json:"lateness"`
	// PerSec is requests ÷ (last arrival − slot).
	PerSec float64 `json:"requests_per_s"`
	// CPU is this process (client and sink) over the wave: CPU-seconds
	// per request, and cores while it ran.
	CPUMicrosPerRequest float64 `json:"cpu_us_per_request"`
	CPUCores            float64 `json:"cpu_cores"`
}

type floorSteady struct {
	Rate     int          `json:"requests_per_s"`
	Seconds  int          `json:"seconds"`
	Lateness harness.Dist `json:"lateness"`
	CPUCores float64      `json:"cpu_cores"`
}

// runFloor measures the webhook floor of the lateness targets: the burst
// (N requests due in one second) and a steady rate (rate requests due at
// every whole second), each request submitted at its slot exactly.
func runFloor(ctx context.Context, e *env, res *Result) error {
	n, rate := e.cfg.BurstJobs, e.cfg.SteadyRate
	secs := pick(e.cfg.Quick, 20, 5)
	res.Params["burst_requests"], res.Params["steady_rate"], res.Params["steady_seconds"] = n, rate, secs
	res.Params["workers"] = scheduler.DefaultWorkers
	m := &floorMetrics{Workers: scheduler.DefaultWorkers}
	res.Metrics = m

	sink, err := harness.NewSink()
	if err != nil {
		return err
	}
	defer func() { _ = sink.Close() }()
	pool := dispatch.NewPool(scheduler.DefaultWorkers, n+rate, dispatch.NewHTTPExecutor(nil), nil)
	defer pool.Close()
	f := &floor{pool: pool, sink: sink, target: &pb.HttpTarget{Url: sink.URL()}}

	// One warm-up second opens the pool's connections, as a node's are
	// open after its first ticks.
	if _, err := f.wave(ctx, nextSecond(), scheduler.DefaultWorkers, "warm"); err != nil {
		return err
	}
	if m.Burst, err = f.burst(ctx, n); err != nil {
		return err
	}
	if m.Steady, err = f.steady(ctx, rate, secs); err != nil {
		return err
	}
	res.Summary = fmt.Sprintf("no raft: burst N=%d lateness p50=%.0fms p99=%.0fms (%.0f req/s, %.0f µs CPU/req); steady %d/s p50=%.0fms p99=%.0fms",
		n, m.Burst.Lateness.P50Ms, m.Burst.Lateness.P99Ms, m.Burst.PerSec, m.Burst.CPUMicrosPerRequest,
		rate, m.Steady.Lateness.P50Ms, m.Steady.Lateness.P99Ms)
	// Not targets of raftcron's: the bounds its targets are measured against.
	res.target("burst_floor_p99", "≤ 250 ms (what the burst target needs)", m.Burst.Lateness.P99Ms, "ms", m.Burst.Lateness.P99Ms <= 250)
	res.target("steady_floor_p99", "≤ 50 ms (what the steady target needs)", m.Steady.Lateness.P99Ms, "ms", m.Steady.Lateness.P99Ms <= 50)
	return nil
}

type floor struct {
	pool   *dispatch.Pool
	sink   *harness.Sink
	target *pb.HttpTarget
	seq    int
}

func (f *floor) burst(ctx context.Context, n int) (floorWave, error) {
	slot := nextSecond()
	if err := sleepUntil(ctx, slot.Add(-200*time.Millisecond)); err != nil {
		return floorWave{}, err
	}
	before, _ := harness.ReadProc(os.Getpid())
	lat, err := f.wave(ctx, slot, n, "burst")
	if err != nil {
		return floorWave{}, err
	}
	after, _ := harness.ReadProc(os.Getpid())
	w := floorWave{Requests: n, Lateness: harness.Summarize(lat)}
	if w.Lateness.MaxMs > 0 {
		w.PerSec = round3(float64(n) / (w.Lateness.MaxMs / 1000))
	}
	w.CPUMicrosPerRequest = round3((after.CPU - before.CPU).Seconds() / float64(n) * 1e6)
	w.CPUCores = round3(harness.CPUShare(before, after))
	return w, nil
}

func (f *floor) steady(ctx context.Context, rate, secs int) (floorSteady, error) {
	s := floorSteady{Rate: rate, Seconds: secs}
	first := nextSecond()
	if err := sleepUntil(ctx, first.Add(-200*time.Millisecond)); err != nil {
		return s, err
	}
	before, _ := harness.ReadProc(os.Getpid())
	var all []time.Duration
	for i := range secs {
		lat, err := f.wave(ctx, first.Add(time.Duration(i)*time.Second), rate, "steady")
		if err != nil {
			return s, err
		}
		all = append(all, lat...)
	}
	after, _ := harness.ReadProc(os.Getpid())
	s.Lateness = harness.Summarize(all)
	s.CPUCores = round3(harness.CPUShare(before, after))
	return s, nil
}

// floorWaveTimeout bounds the wait for one wave's requests.
const floorWaveTimeout = 60 * time.Second

// wave submits n requests for slot at slot and returns each one's lateness
// at the sink. A request the sink did not get (the executor failed) is an
// error: the floor must measure deliveries, not failures.
func (f *floor) wave(ctx context.Context, slot time.Time, n int, name string) ([]time.Duration, error) {
	if err := sleepUntil(ctx, slot); err != nil {
		return nil, err
	}
	from := f.sink.Len()
	var (
		mu     sync.Mutex
		failed int
		first  string
		wg     sync.WaitGroup
	)
	done := func(_ dispatch.Attempt, o dispatch.Outcome) {
		defer wg.Done()
		if o.State != pb.RunState_RUN_STATE_SUCCEEDED {
			mu.Lock()
			if failed++; failed == 1 {
				first = o.Detail
			}
			mu.Unlock()
		}
	}
	for i := range n {
		f.seq++
		a := dispatch.Attempt{
			Job: name + "-" + strconv.Itoa(i), RunID: "floor-" + strconv.Itoa(f.seq),
			Token: uint64(f.seq), Number: 1, ScheduledAt: slot, HTTP: f.target,
		}
		wg.Add(1)
		if err := f.pool.Submit(ctx, a, done); err != nil {
			wg.Done()
			return nil, fmt.Errorf("floor: submit: %w", err)
		}
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(floorWaveTimeout):
		return nil, fmt.Errorf("floor: %s wave of %d not delivered within %s", name, n, floorWaveTimeout)
	}
	if failed > 0 {
		return nil, fmt.Errorf("floor: %d of %d %s requests failed; first: %s", failed, n, name, first)
	}
	got := f.sink.Since(from)
	lat := make([]time.Duration, 0, len(got))
	for _, d := range got {
		lat = append(lat, d.Lateness())
	}
	return lat, nil
}

// nextSecond is the next whole second at least 300 ms away.
func nextSecond() time.Time {
	return time.Now().Add(300*time.Millisecond + time.Second).Truncate(time.Second)
}
