package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestApplyBulkResultPerCommand(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "existing", "@daily")
	const n = 300
	cmds := make([]*pb.Command, n)
	for i := range cmds {
		cmds[i] = putCmd(fmt.Sprintf("job-%03d", i), "@hourly")
	}
	cmds[7] = putCmd("existing", "@hourly")
	cmds[9] = putCmd("", "@hourly") // the FSM refuses it
	results, err := leader.node.ApplyBulk(ctxTimeout(t, 10*time.Second), cmds)
	if err != nil {
		t.Fatalf("ApplyBulk: %v", err)
	}
	if len(results) != n {
		t.Fatalf("%d results for %d commands", len(results), n)
	}
	for i, r := range results {
		want := pb.ResultCode_RESULT_CODE_OK
		if i == 9 {
			want = pb.ResultCode_RESULT_CODE_MALFORMED
		}
		if r.Err != nil || r.Result.GetCode() != want {
			t.Fatalf("results[%d] = %v, %v; want %v", i, r.Result, r.Err, want)
		}
		if created := r.Result.GetCreated(); r.Result.GetCode() == pb.ResultCode_RESULT_CODE_OK && created != (i != 7) {
			t.Errorf("results[%d].created = %v: the result is not this command's", i, created)
		}
	}
	// 298 new jobs (one command updates "existing", one is refused) and
	// the existing one.
	const want = n - 1
	if got := leader.fsm.len(); got != want {
		t.Errorf("leader holds %d jobs, want %d", got, want)
	}
	for _, f := range tc.followers(leader) {
		testutil.WaitFor(t, 10*time.Second, f.id+" applying the bulk", func() bool { return f.fsm.len() == want })
	}
}

func TestApplyBulkOnFollowerProposesNothing(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	_, err := f.node.ApplyBulk(ctxTimeout(t, 5*time.Second), []*pb.Command{putCmd("a", "@daily")})
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ApplyBulk on a follower: %v, want ErrNotLeader", err)
	}
	readBarrier(t, leader.node)
	if got := leader.fsm.len(); got != 0 {
		t.Errorf("leader holds %d jobs after a refused call, want 0", got)
	}
}

func TestApplyBulkRefusedBeforeProposing(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := leader.node.ApplyBulk(ctx, []*pb.Command{putCmd("a", "@daily")}); !errors.Is(err, context.Canceled) {
		t.Errorf("ApplyBulk with an ended context: %v, want context.Canceled", err)
	}
	if _, err := leader.node.ApplyBulk(ctxTimeout(t, 5*time.Second), []*pb.Command{putCmd("a", "@daily"), nil}); err == nil {
		t.Errorf("ApplyBulk with a nil command succeeded")
	}
	readBarrier(t, leader.node)
	if got := leader.fsm.len(); got != 0 {
		t.Errorf("leader holds %d jobs after refused calls, want 0", got)
	}
}

// The bound on ApplyBulk's entries in flight belongs to each node: one
// node with every slot taken (a leader whose followers are slow) must not
// hold up the calls of another node of the same process.
func TestBulkSlotsArePerNode(t *testing.T) {
	busy := newCluster(t, 1, func(c *Config) { c.Peers = nil })
	for range cap(busy.nodes[0].node.bulkSem) {
		busy.nodes[0].node.bulkSem <- struct{}{}
	}
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	results, err := leader.node.ApplyBulk(ctxTimeout(t, 5*time.Second), []*pb.Command{putCmd("a", "@daily")})
	if err != nil {
		t.Fatalf("ApplyBulk: %v", err)
	}
	if r := results[0]; r.Err != nil || r.Result.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("ApplyBulk beside a node with no free slot: %v, %v", r.Result, r.Err)
	}
}

// BenchmarkApplyBulk100: 64 concurrent clients on the leader, each
// committing 100 commands per call.
func BenchmarkApplyBulk100(b *testing.B) {
	_, leader := benchCluster(b)
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(32) // 64 clients on 2 cores
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			cmds := make([]*pb.Command, 100)
			for i := range cmds {
				cmds[i] = putCmd(fmt.Sprintf("job-%d", seq.Add(1)), "@hourly")
			}
			results, err := leader.node.ApplyBulk(ctx, cmds)
			if err != nil {
				b.Error(err)
				return
			}
			for _, r := range results {
				if r.Err != nil {
					b.Error(r.Err)
					return
				}
			}
		}
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "writes/s")
}
