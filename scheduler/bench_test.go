package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
)

// BenchmarkRebuild measures the heap rebuild a new leader does: one
// schedule evaluation per job.
func BenchmarkRebuild(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := newHarness(b)
			for i := range n {
				s := spec(fmt.Sprintf("job-%07d", i), []string{"@every 60s", "*/5 * * * *", "0 2 * * *"}[i%3])
				h.putJob(s)
			}
			l := newLeader(h.s)
			l.term = 2
			b.ResetTimer()
			for b.Loop() {
				l.rebuild(h.clock.Now())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/job")
		})
	}
}

// BenchmarkBurstTick measures one tick in which every job is due: plan,
// one FireBatch through the FSM, dispatch, and the re-plan that follows.
func BenchmarkBurstTick(b *testing.B) {
	const n = 10_000
	h := newHarness(b)
	for i := range n {
		h.putJob(spec(fmt.Sprintf("job-%07d", i), "@every 10s"))
	}
	h.lead()
	b.ResetTimer()
	var dispatched, settled time.Duration
	cpu, measured := proc.SelfCPU()
	for b.Loop() {
		want := h.exec.count.Load() + n
		start := time.Now()
		h.clock.Advance(10 * time.Second)
		for h.exec.count.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
		dispatched += time.Since(start)
		h.settle()
		settled += time.Since(start)
	}
	b.ReportMetric(float64(dispatched.Milliseconds())/float64(b.N), "ms-to-dispatch")
	b.ReportMetric(float64(settled.Milliseconds())/float64(b.N), "ms-to-settle")
	// The process's CPU, the fake executor's included: on a shared
	// machine it varies far less than the time does.
	if end, ok := proc.SelfCPU(); measured && ok {
		b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(b.N*n), "cpu-ns/job")
	}
}
