package cluster

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// testClock is one node's settable wall clock.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.set(t)
	return c
}

func (c *testClock) now() time.Time  { return time.Unix(0, c.ns.Load()) }
func (c *testClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// skewedCluster starts n nodes over the real FSM, node i's clock at
// base + i hours, so that every node's time is told apart.
func skewedCluster(t *testing.T, n int, base time.Time) (*testCluster, map[string]*fsm.FSM, map[string]*testClock) {
	t.Helper()
	muxes := make([]*Mux, n)
	peers := make([]Peer, n)
	for i := range muxes {
		muxes[i] = listen(t, "127.0.0.1:0")
		peers[i] = Peer{ID: fmt.Sprintf("n%d", i+1), Addr: muxes[i].Addr().String()}
	}
	fsms := map[string]*fsm.FSM{}
	clocks := map[string]*testClock{}
	tc := &testCluster{tb: t}
	for i, m := range muxes {
		id := peers[i].ID
		fsms[id] = fsm.New()
		clocks[id] = newTestClock(base.Add(time.Duration(i) * time.Hour))
		tc.nodes = append(tc.nodes, startNode(t, id, t.TempDir(), m, func(c *Config) {
			c.Peers = peers
			c.FSM = fsms[id]
			c.Now = clocks[id].now
		}))
	}
	return tc, fsms, clocks
}

// applyRetry is Apply through n, retrying while no leader is known (an
// election under a loaded CPU); any other error fails the test.
func applyRetry(t *testing.T, n *Node, cmd *pb.Command) *pb.CommandResult {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	for {
		res, err := n.Apply(ctx, proto.CloneOf(cmd))
		if errors.Is(err, ErrNoLeader) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("Apply on %s: %v", n.cfg.ID, err)
		}
		if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Fatalf("Apply on %s: %s: %s", n.cfg.ID, res.GetCode(), res.GetMessage())
		}
		return res
	}
}

// A follower whose clock runs an hour ahead creates, pauses and resumes a
// job, stamping each command with its own clock as a receiving node used to:
// the cursor still follows the leader's clock (DESIGN §2: the leader stamps
// every command it proposes), so no slot of that hour is lost.
func TestLeaderStampsForwardedWrites(t *testing.T) {
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tc, fsms, clocks := skewedCluster(t, 3, base)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	lc, fc := clocks[leader.id], clocks[f.id]
	lc.set(base)
	fc.set(base.Add(time.Hour))

	stamped := func(kind *pb.Command) *pb.Command {
		kind.ProposedAtUnixNano = fc.now().UnixNano() // the follower's own clock
		return kind
	}
	create := stamped(&pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{
		Spec: &pb.JobSpec{Name: "skewed", Schedule: "@every 1m", Http: &pb.HttpTarget{Url: "http://127.0.0.1:1/"}},
		Mode: pb.PutMode_PUT_MODE_CREATE,
	}}})
	res := applyRetry(t, f.node, create)
	if got := res.GetJob().GetStatus().GetCursorUnix(); got != base.Unix() {
		t.Errorf("create through the follower: cursor %s, want the leader's %s", time.Unix(got, 0).UTC(), base)
	}

	lc.set(base.Add(time.Minute))
	fc.set(base.Add(time.Hour + time.Minute))
	applyRetry(t, f.node, stamped(&pb.Command{Kind: &pb.Command_SetPaused{SetPaused: &pb.SetPausedCommand{Name: "skewed", Paused: true}}}))
	lc.set(base.Add(2 * time.Minute))
	fc.set(base.Add(time.Hour + 2*time.Minute))
	res = applyRetry(t, f.node, stamped(&pb.Command{Kind: &pb.Command_SetPaused{SetPaused: &pb.SetPausedCommand{Name: "skewed"}}}))
	want := base.Add(2 * time.Minute).Unix()
	if got := res.GetJob().GetStatus().GetCursorUnix(); got != want {
		t.Errorf("resume through the follower: cursor %s, want the leader's %s", time.Unix(got, 0).UTC(), time.Unix(want, 0).UTC())
	}
	readBarrier(t, f.node)
	if st, err := fsms[f.id].JobStatus("skewed"); err != nil || st.GetCursorUnix() != want {
		t.Errorf("the follower's own state: %v, %v; want cursor %s", st, err, time.Unix(want, 0).UTC())
	}
}

// The leader stamps what it proposes itself too, through Apply and
// ApplyBulk, whatever time the command carries.
func TestLeaderStampsItsOwnWrites(t *testing.T) {
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newTestClock(base)
	tc := newCluster(t, 1, func(c *Config) { c.Now = clock.now })
	leader := tc.waitLeader(10 * time.Second)

	cmd := putCmd("direct", "@hourly")
	cmd.ProposedAtUnixNano = base.Add(time.Hour).UnixNano()
	applyRetry(t, leader.node, cmd)
	if got := leader.fsm.proposedAt("direct"); got != base.UnixNano() {
		t.Errorf("Apply on the leader: proposed_at %s, want the leader's %s", time.Unix(0, got).UTC(), base)
	}

	batched := putCmd("batched", "@hourly")
	batched.ProposedAtUnixNano = 0
	results, err := leader.node.ApplyBulk(ctxTimeout(t, 10*time.Second), []*pb.Command{batched})
	if err != nil || len(results) != 1 || results[0].Err != nil {
		t.Fatalf("ApplyBulk: %v, %v", results, err)
	}
	if got := leader.fsm.proposedAt("batched"); got != base.UnixNano() {
		t.Errorf("ApplyBulk on the leader: proposed_at %s, want the leader's %s", time.Unix(0, got).UTC(), base)
	}
}

// FireBatch, CompleteBatch, RecordProgress, EndPause and the raise of the
// cluster version are the leading node's own: Apply never proposes or forwards them, and the leader's InternalService refuses
// them, so nothing reaches the log.
func TestForwardingRefusesSchedulerCommands(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	put(t, f.node, "warm", "@hourly") // a leader is known everywhere
	before := leader.fsm.entries()

	cmds := map[string]*pb.Command{
		"fire_batch": {Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
			LeaderId: f.id, Term: 1, Fires: []*pb.Fire{{Job: "warm", Generation: 1, Kind: pb.FireKind_FIRE_KIND_MANUAL}},
		}}},
		"complete_batch": {Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
			Completions: []*pb.Completion{{RunId: "warm-1", Token: 1, Outcome: pb.RunState_RUN_STATE_SUCCEEDED}},
		}}},
		"set_cluster_version": {Kind: &pb.Command_SetClusterVersion{SetClusterVersion: &pb.SetClusterVersionCommand{Version: 1}}},
		"record_progress": {Kind: &pb.Command_RecordProgress{RecordProgress: &pb.RecordProgressCommand{
			Records: []*pb.ProgressRecord{{RunId: "warm-1", Token: 1, Message: "forged"}},
		}}},
		"end_pause": {Kind: &pb.Command_EndPause{EndPause: &pb.EndPauseCommand{Job: "warm", UntilUnix: 1}}},
	}
	ctx := ctxTimeout(t, 10*time.Second)
	for name, cmd := range cmds {
		for _, n := range []*testNode{f, leader} {
			if _, err := n.node.Apply(ctx, cmd); !errors.Is(err, ErrNotForwardable) {
				t.Errorf("Apply(%s) on %s: %v, want ErrNotForwardable", name, n.id, err)
			}
		}
		data, err := proto.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		_, err = (&internalServer{n: leader.node}).Apply(ctx, &pb.ApplyRequest{Command: data})
		if st := status.Convert(err); st.Code() != codes.PermissionDenied {
			t.Errorf("InternalService.Apply(%s) on the leader: %v, want PermissionDenied", name, err)
		}
	}
	_, err := (&internalServer{n: leader.node}).Apply(ctx, &pb.ApplyRequest{Command: []byte{0xff, 0xff}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument {
		t.Errorf("InternalService.Apply(undecodable) on the leader: %v, want InvalidArgument", err)
	}

	readBarrier(t, leader.node)
	if got := leader.fsm.entries(); got != before {
		t.Errorf("the FSM applied %d entries after the refusals, want none", got-before)
	}
}
