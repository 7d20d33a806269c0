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

// floorMetrics is the httpfloor scenario: the lateness of the burst's and
// the steady scenario's webhook waves with nothing but the HTTP in the
// way, on their own. Those scenarios measure the same waves beside
// themselves; this one is for work on the executor alone.
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
	// OtherCores is the rest of the machine's busy cores meanwhile: above
	// ~0.3 other work competed with the floor.
	OtherCores float64 `json:"other_cores"`
}

// lateness is nil when the wave was not measured.
func (w *floorWave) lateness() *harness.Dist {
	if w == nil {
		return nil
	}
	return &w.Lateness
}

type floorSteady struct {
	Rate       int          `json:"requests_per_s"`
	Seconds    int          `json:"seconds"`
	Lateness   harness.Dist `json:"lateness"`
	CPUCores   float64      `json:"cpu_cores"`
	OtherCores float64      `json:"other_cores"`
}

// lateness is nil when the waves were not measured.
func (s *floorSteady) lateness() *harness.Dist {
	if s == nil {
		return nil
	}
	return &s.Lateness
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
	if m.Burst, err = burstFloor(ctx, sink, n); err != nil {
		return err
	}
	if m.Steady, err = steadyFloor(ctx, sink, rate, secs); err != nil {
		return err
	}
	res.Summary = fmt.Sprintf("no raft: burst N=%d lateness p50=%.0fms p99=%.0fms (%.0f req/s, %.0f µs CPU/req); steady %d/s p50=%.0fms p99=%.0fms",
		n, m.Burst.Lateness.P50Ms, m.Burst.Lateness.P99Ms, m.Burst.PerSec, m.Burst.CPUMicrosPerRequest,
		rate, m.Steady.Lateness.P50Ms, m.Steady.Lateness.P99Ms)
	return nil
}

// burstFloor sends the burst's wave, n requests due at one second, through
// raftcron's own executor and worker pool into sink.
func burstFloor(ctx context.Context, sink *harness.Sink, n int) (floorWave, error) {
	f, err := newFloor(ctx, sink, n)
	if err != nil {
		return floorWave{}, err
	}
	defer f.pool.Close()
	return f.burst(ctx, n)
}

// burstFloorAlone is burstFloor into a sink of its own.
func burstFloorAlone(ctx context.Context, n int) (floorWave, error) {
	sink, err := harness.NewSink()
	if err != nil {
		return floorWave{}, err
	}
	defer func() { _ = sink.Close() }()
	return burstFloor(ctx, sink, n)
}

// steadyFloor sends the steady scenario's waves, rate requests due at
// every second for secs seconds, as burstFloor does.
func steadyFloor(ctx context.Context, sink *harness.Sink, rate, secs int) (floorSteady, error) {
	f, err := newFloor(ctx, sink, rate)
	if err != nil {
		return floorSteady{}, err
	}
	defer f.pool.Close()
	return f.steady(ctx, rate, secs)
}

// newFloor starts a pool of the node's default size whose queue holds a
// whole wave of n, and warms it with one second of requests that opens
// its connections, as a node's are open after its first ticks.
func newFloor(ctx context.Context, sink *harness.Sink, n int) (*floor, error) {
	pool := dispatch.NewPool(scheduler.DefaultWorkers, max(n, scheduler.DefaultWorkers), dispatch.NewHTTPExecutor(nil), nil)
	f := &floor{pool: pool, sink: sink, target: &pb.HttpTarget{Url: sink.URL()}}
	if _, err := f.wave(ctx, nextSecond(), scheduler.DefaultWorkers, "warm"); err != nil {
		pool.Close()
		return nil, err
	}
	return f, nil
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
	before := sampleSelf()
	lat, err := f.wave(ctx, slot, n, "burst")
	if err != nil {
		return floorWave{}, err
	}
	after := sampleSelf()
	w := floorWave{Requests: n, Lateness: harness.Summarize(lat)}
	if w.Lateness.MaxMs > 0 {
		w.PerSec = round3(float64(n) / (w.Lateness.MaxMs / 1000))
	}
	w.CPUMicrosPerRequest = round3((after.self.CPU - before.self.CPU).Seconds() / float64(n) * 1e6)
	w.CPUCores, w.OtherCores = selfAndOther(before, after)
	return w, nil
}

func (f *floor) steady(ctx context.Context, rate, secs int) (floorSteady, error) {
	s := floorSteady{Rate: rate, Seconds: secs}
	first := nextSecond()
	if err := sleepUntil(ctx, first.Add(-200*time.Millisecond)); err != nil {
		return s, err
	}
	before := sampleSelf()
	var all []time.Duration
	for i := range secs {
		lat, err := f.wave(ctx, first.Add(time.Duration(i)*time.Second), rate, "steady")
		if err != nil {
			return s, err
		}
		all = append(all, lat...)
	}
	after := sampleSelf()
	s.Lateness = harness.Summarize(all)
	s.CPUCores, s.OtherCores = selfAndOther(before, after)
	return s, nil
}

// selfSample is this process's and the machine's CPU at one moment.
type selfSample struct {
	self harness.ProcSample
	sys  harness.SystemSample
}

func sampleSelf() selfSample {
	var s selfSample
	s.self, _ = harness.ReadProc(os.Getpid())
	s.sys, _ = harness.ReadSystem()
	return s
}

// selfAndOther is this process's cores between a and b and the machine's
// other busy cores.
func selfAndOther(a, b selfSample) (self, other float64) {
	self = harness.CPUShare(a.self, b.self)
	other = harness.SystemCores(a.sys, b.sys) - self
	return round3(self), round3(max(other, 0))
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
