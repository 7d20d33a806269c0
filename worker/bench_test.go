package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/worker"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// BenchmarkBurst is the leader-to-handler leg of the workers bench
// scenario (bench/cmd/raftcron-bench): a tick's 10,000 committed attempts
// submitted at once to the hub, for two workers of one pool whose handler
// returns at once. One op is the whole burst; it reports the handler
// lateness from the first Submit (p50, p99), how long the Submits took
// (the scheduler's loop makes them, while outcomes come back), and the
// process's CPU time, allocations and bytes per attempt (hub and workers
// together), which load on a shared machine distorts less or not at all.
func BenchmarkBurst(b *testing.B) {
	const attempts, workers = 10_000, 2
	n := newNode(b, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(n.hub.Collectors()...)
	var (
		mu      sync.Mutex
		handled []time.Time
		settled atomic.Int64
		all     = make(chan struct{}, 1)
	)
	record := func(context.Context, worker.Run) error {
		mu.Lock()
		handled = append(handled, time.Now())
		mu.Unlock()
		return nil
	}
	for i := range workers {
		startWorker(b, worker.Config{ID: fmt.Sprintf("w%d", i+1), Addrs: []string{n.addr}, Concurrency: attempts},
			map[string]worker.HandlerFunc{"record": record})
	}
	waitConnected(b, reg, workers)
	done := func(dispatch.Attempt, dispatch.Outcome) {
		if settled.Add(1) == attempts {
			all <- struct{}{}
		}
	}
	target := &pb.WorkerTarget{Pool: "batch", Handler: "record"}
	slot := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	var lat []time.Duration
	var submitting time.Duration
	cpu, measured := proc.SelfCPU()
	for b.Loop() {
		mu.Lock()
		handled = handled[:0]
		mu.Unlock()
		settled.Store(0)
		start := time.Now()
		for range attempts {
			tok := tokens.Add(1)
			job := fmt.Sprintf("work-%06d", tok)
			a := dispatch.Attempt{Job: job, RunID: fmt.Sprintf("%s-%d", job, tok), Token: tok, Number: 1,
				ScheduledAt: slot, Worker: target, WaitUntil: start.Add(time.Minute)}
			if err := n.hub.Submit(context.Background(), a, done); err != nil {
				b.Fatal(err)
			}
		}
		submitting += time.Since(start)
		select {
		case <-all:
		case <-time.After(time.Minute):
			b.Fatalf("%d of %d outcomes within a minute", settled.Load(), attempts)
		}
		mu.Lock()
		for _, at := range handled {
			lat = append(lat, at.Sub(start))
		}
		mu.Unlock()
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(submitting.Microseconds())/1000/float64(b.N), "submit-ms")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*attempts), "ns/attempt")
	if end, ok := proc.SelfCPU(); measured && ok {
		b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(b.N*attempts), "cpu-ns/attempt")
	}
}

// waitConnected waits until want workers are connected to the hub.
func waitConnected(t testing.TB, reg *prometheus.Registry, want int) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, fmt.Sprintf("%d workers connected", want), func() bool {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := 0.0
		for _, mf := range mfs {
			if mf.GetName() == "raftcron_workers_connected" {
				for _, m := range mf.GetMetric() {
					got += m.GetGauge().GetValue()
				}
			}
		}
		return int(got) == want
	})
}
