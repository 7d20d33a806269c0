package cluster

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
)

// benchCluster is a 3-node loopback cluster as deployed: fsync on, Raft's
// default timings.
func benchCluster(b *testing.B) (*testCluster, *testNode) {
	b.Helper()
	tc := newCluster(b, 3, func(c *Config) {
		c.NoSync = false
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 0, 0, 0
	})
	return tc, tc.waitLeader(30 * time.Second)
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// reportCPU reports the CPU the three nodes spent per write since start
// (where the platform tells a process its CPU time).
func reportCPU(b *testing.B, start time.Duration) {
	now, ok := proc.SelfCPU()
	if !ok {
		return
	}
	b.ReportMetric(float64((now-start).Microseconds())/float64(b.N), "cpu-µs/write")
}

// BenchmarkApply: one client, one write at a time, on the leader.
func BenchmarkApply(b *testing.B) {
	_, leader := benchCluster(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := leader.node.Apply(ctx, putCmd(fmt.Sprintf("job-%d", i), "@hourly")); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

// BenchmarkApplyParallel64: 64 concurrent clients on the leader; Raft
// batches what they propose into shared fsyncs.
func BenchmarkApplyParallel64(b *testing.B) {
	_, leader := benchCluster(b)
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	cpu, _ := proc.SelfCPU()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			name := fmt.Sprintf("job-%d", seq.Add(1))
			if _, err := leader.node.Apply(ctx, putCmd(name, "@hourly")); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b)
	reportCPU(b, cpu)
}

// BenchmarkElection measures, at Raft's default timings, the time to the
// first leader of a cold 3-node cluster and the failover after the leader
// crashes. It reports and logs them; nothing asserts a timing.
func BenchmarkElection(b *testing.B) {
	var cold, failover time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		tc, leader := benchCluster(b)
		cold += time.Since(start)

		start = time.Now()
		leader.crash()
		tc.waitLeader(30 * time.Second)
		failover += time.Since(start)
		for _, tn := range tc.nodes {
			tn.stop()
		}
	}
	b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "ms/first-leader")
	b.ReportMetric(float64(failover.Milliseconds())/float64(b.N), "ms/failover")
	b.Logf("defaults: first leader after %s, failover after %s (mean of %d)", cold/time.Duration(b.N), failover/time.Duration(b.N), b.N)
}

// BenchmarkApplyParallel64ViaFollower: as BenchmarkApplyParallel64, but
// every write is forwarded from a follower over gRPC.
func BenchmarkApplyParallel64ViaFollower(b *testing.B) {
	tc, leader := benchCluster(b)
	follower := tc.followers(leader)[0]
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	cpu, _ := proc.SelfCPU()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			name := fmt.Sprintf("job-%d", seq.Add(1))
			if _, err := follower.node.Apply(ctx, putCmd(name, "@hourly")); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b)
	reportCPU(b, cpu)
}
