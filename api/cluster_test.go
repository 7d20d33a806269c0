package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestGetStatusFillsFencingToken(t *testing.T) {
	h := newHarness(t)
	shared := &pb.NodeStatus{Id: "n1", State: "leader", Leader: &pb.ServerRef{Id: "n1", Address: "127.0.0.1:7001"}, Term: 3}
	h.cluster.status = shared
	h.store.token = 42
	resp, err := h.admin.GetStatus(testCtx(t), &pb.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := proto.CloneOf(shared)
	want.FencingToken = 42
	if !proto.Equal(resp.GetStatus(), want) {
		t.Errorf("status %v, want %v", resp.GetStatus(), want)
	}
	if shared.GetFencingToken() != 0 {
		t.Errorf("GetStatus wrote into the cluster's own status value")
	}
}

// lastHourAt answers the counts of the hour up to a time within a minute
// of the call.
type lastHourAt struct{ t *testing.T }

func (c lastHourAt) LastHour(now time.Time) *pb.RunCounts {
	if d := time.Since(now); d < 0 || d > time.Minute {
		c.t.Errorf("asked for the hour up to %s, %s from now", now, d)
	}
	return &pb.RunCounts{Fires: 85, Failures: 2, Missed: 1}
}

func TestGetStatusCarriesTheLastHoursRunCounts(t *testing.T) {
	h := newHarness(t)
	h.cluster.status = &pb.NodeStatus{Id: "n1", State: "leader"}
	svc := NewClusterService(Deps{Cluster: h.cluster, Registry: h.store, Counts: lastHourAt{t}})
	resp, err := svc.GetStatus(testCtx(t), &pb.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.GetStatus().GetLastHour(), (&pb.RunCounts{Fires: 85, Failures: 2, Missed: 1}); !proto.Equal(got, want) {
		t.Fatalf("last hour %v, want %v", got, want)
	}
}

func TestAddNode(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	if _, err := h.admin.AddNode(ctx, &pb.AddNodeRequest{Id: "n4", Address: "10.0.0.4:7001"}); err != nil {
		t.Fatalf("AddNode: %v", err)
	}
	if _, err := h.admin.AddNode(ctx, &pb.AddNodeRequest{Id: "n6", Address: "[::1]:7001"}); err != nil {
		t.Fatalf("AddNode with IPv6: %v", err)
	}
	bad := map[string]struct {
		req   *pb.AddNodeRequest
		field string
	}{
		"empty id":      {&pb.AddNodeRequest{Address: "10.0.0.4:7001"}, "id"},
		"id pattern":    {&pb.AddNodeRequest{Id: "Node 4", Address: "10.0.0.4:7001"}, "id"},
		"empty address": {&pb.AddNodeRequest{Id: "n5"}, "address"},
		"no port":       {&pb.AddNodeRequest{Id: "n5", Address: "10.0.0.5"}, "address"},
		"no host":       {&pb.AddNodeRequest{Id: "n5", Address: ":7001"}, "address"},
		"port zero":     {&pb.AddNodeRequest{Id: "n5", Address: "10.0.0.5:0"}, "address"},
		"port too big":  {&pb.AddNodeRequest{Id: "n5", Address: "10.0.0.5:65536"}, "address"},
		"named port":    {&pb.AddNodeRequest{Id: "n5", Address: "10.0.0.5:http"}, "address"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := h.admin.AddNode(ctx, tc.req)
			st := wantCode(t, err, codes.InvalidArgument)
			if fields := badRequestFields(t, st); !slices.Equal(fields, []string{tc.field}) {
				t.Errorf("violations on %v, want [%s]", fields, tc.field)
			}
		})
	}
	want := []string{"add n4 10.0.0.4:7001", "add n6 [::1]:7001"}
	if got := h.cluster.recorded(); !slices.Equal(got, want) {
		t.Errorf("cluster calls %v, want %v (bad requests must not reach it)", got, want)
	}
}

func TestRemoveNode(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	if _, err := h.admin.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: "n3"}); err != nil {
		t.Fatalf("RemoveNode: %v", err)
	}
	_, err := h.admin.RemoveNode(ctx, &pb.RemoveNodeRequest{})
	if fields := badRequestFields(t, wantCode(t, err, codes.InvalidArgument)); !slices.Equal(fields, []string{"id"}) {
		t.Errorf("violations on %v, want [id]", fields)
	}
	h.cluster.err = cluster.ErrNotFound
	_, err = h.admin.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: "n9"})
	wantCode(t, err, codes.NotFound)
	if got, want := h.cluster.recorded(), []string{"remove n3", "remove n9"}; !slices.Equal(got, want) {
		t.Errorf("cluster calls %v, want %v", got, want)
	}
}

func TestTransferLeadership(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	h.cluster.leader = &pb.ServerRef{Id: "n2", Address: "127.0.0.1:7002"}
	resp, err := h.admin.TransferLeadership(ctx, &pb.TransferLeadershipRequest{Id: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(resp.GetLeader(), h.cluster.leader) {
		t.Errorf("leader %v, want %v", resp.GetLeader(), h.cluster.leader)
	}
	// An empty ID lets Raft pick the most up-to-date follower.
	if _, err := h.admin.TransferLeadership(ctx, &pb.TransferLeadershipRequest{}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.cluster.recorded(), []string{"transfer n2", "transfer "}; !slices.Equal(got, want) {
		t.Errorf("cluster calls %v, want %v", got, want)
	}
	h.cluster.err = &cluster.NoLeaderError{}
	_, err = h.admin.TransferLeadership(ctx, &pb.TransferLeadershipRequest{})
	assertNotLeader(t, err, "", "")
}

// Membership changes are recorded in the audit trail through the FSM, by
// their caller, after the change succeeded; a refused change records
// nothing.
func TestMembershipChangesAreAudited(t *testing.T) {
	state := fsm.New()
	store := &fsmStore{f: state}
	now := func() time.Time { return testNow }
	sw := NewAuditSwitch(store, state, DefaultAuditLimit, nil, now)
	fc := &fakeCluster{
		status: &pb.NodeStatus{Id: "n1", Leader: &pb.ServerRef{Id: "n1", Address: "10.0.0.1:7001"}},
		leader: &pb.ServerRef{Id: "n2", Address: "10.0.0.2:7001"},
	}
	svc := NewClusterService(Deps{Cluster: fc, Registry: state, Store: store, Audit: sw})
	ctx := withPrincipal(testCtx(t), Principal{Name: "ops", Role: pb.AclRole_ACL_ROLE_MANAGEMENT})

	if _, err := svc.AddNode(ctx, &pb.AddNodeRequest{Id: "n4", Address: "10.0.0.4:7001"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TransferLeadership(ctx, &pb.TransferLeadershipRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: "n4"}); err != nil {
		t.Fatal(err)
	}
	fc.err = cluster.ErrNotFound
	if _, err := svc.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: "n9"}); err == nil {
		t.Fatal("RemoveNode of an unknown node succeeded")
	}
	fc.err = nil

	var trail []string
	for _, r := range state.ListAudit(fsm.AuditQuery{}) {
		line := r.GetPrincipal() + " " + r.GetAction()
		for _, c := range r.GetChanges() {
			line += " " + c.GetField() + ":" + c.GetBefore() + ">" + c.GetAfter()
		}
		trail = append(trail, line)
	}
	want := []string{
		"ops member_remove node_id:n4>",
		"ops leader_transfer leader:n1>n2 address:>10.0.0.2:7001",
		"ops member_join node_id:>n4 address:>10.0.0.4:7001",
		"system audit_limit limit:0>10000",
	}
	if !slices.Equal(trail, want) {
		t.Fatalf("trail, newest first:\n%q\nwant\n%q", trail, want)
	}
}

// A membership change whose record cannot be committed says so: the change
// was made, the trail misses it.
func TestMembershipChangeReportsAnUnrecordedChange(t *testing.T) {
	state := fsm.New()
	applyCmd(t, state, 1, &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 10}}})
	store := &failingStore{err: cluster.ErrHalted}
	svc := NewClusterService(Deps{Cluster: &fakeCluster{}, Registry: state, Store: store})
	_, err := svc.AddNode(testCtx(t), &pb.AddNodeRequest{Id: "n4", Address: "10.0.0.4:7001"})
	if err == nil || !strings.Contains(err.Error(), "member_join of n4 done, but its audit record was not committed") {
		t.Fatalf("AddNode with the record refused: %v, want an error saying the join was made but not recorded", err)
	}
}

// Removing the leader leaves the cluster without one until the next is
// elected: the removal's record waits for it, and is committed once.
func TestMembershipRecordWaitsForTheNextLeader(t *testing.T) {
	state := fsm.New()
	applyCmd(t, state, 1, &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 10}}})
	store := &electingStore{Store: &fsmStore{f: state, index: 1}, refusals: 3}
	svc := NewClusterService(Deps{Cluster: &fakeCluster{}, Registry: state, Store: store})
	if _, err := svc.RemoveNode(testCtx(t), &pb.RemoveNodeRequest{Id: "n3"}); err != nil {
		t.Fatalf("RemoveNode while the next leader is elected: %v, want it done and recorded", err)
	}
	var removals int
	for _, r := range state.ListAudit(fsm.AuditQuery{}) {
		if r.GetAction() == fsm.AuditMemberRemove {
			removals++
		}
	}
	if store.calls != 4 || removals != 1 {
		t.Fatalf("%d proposals and %d member_remove records, want 4 proposals (3 without a leader) and 1 record", store.calls, removals)
	}
}

// With no leader elected within the caller's deadline, the change is
// reported made and not recorded.
func TestMembershipRecordWithoutALeaderUntilTheDeadline(t *testing.T) {
	state := fsm.New()
	applyCmd(t, state, 1, &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 10}}})
	store := &failingStore{err: &cluster.NoLeaderError{}}
	svc := NewClusterService(Deps{Cluster: &fakeCluster{}, Registry: state, Store: store})
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	_, err := svc.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: "n3"})
	if err == nil || !strings.Contains(err.Error(), "member_remove of n3 done, but its audit record was not committed") {
		t.Fatalf("RemoveNode with no leader until the deadline: %v, want an error saying the removal was made but not recorded", err)
	}
	if ctx.Err() == nil {
		t.Fatalf("RemoveNode gave up before the caller's deadline: %v", err)
	}
}

// A node that removed itself learns of no next leader: it reports its
// removal unrecorded at once instead of waiting out the deadline.
func TestRemovingItselfDoesNotWaitForALeader(t *testing.T) {
	state := fsm.New()
	applyCmd(t, state, 1, &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 10}}})
	store := &electingStore{Store: &fsmStore{f: state, index: 1}, refusals: 1}
	fc := &fakeCluster{status: &pb.NodeStatus{Id: "n3"}}
	svc := NewClusterService(Deps{Cluster: fc, Registry: state, Store: store})
	_, err := svc.RemoveNode(testCtx(t), &pb.RemoveNodeRequest{Id: "n3"})
	if err == nil || !strings.Contains(err.Error(), "member_remove of n3 done, but its audit record was not committed") {
		t.Fatalf("RemoveNode of itself: %v, want an error saying the removal was made but not recorded", err)
	}
	if store.calls != 1 {
		t.Fatalf("%d proposals of the record, want 1", store.calls)
	}
}

// electingStore refuses its first proposals as a cluster without a leader
// does, then passes them on.
type electingStore struct {
	Store
	refusals int
	calls    int
}

func (s *electingStore) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	s.calls++
	if s.calls <= s.refusals {
		return nil, &cluster.NoLeaderError{LeaderID: "n3", Err: errors.New("n3 is not the leader")}
	}
	return s.Store.Apply(ctx, cmd)
}

// While a voter predates command version 2 the trail is off and a
// membership change is not recorded, and not refused either.
func TestMembershipChangeDuringAnUpgradeIsNotRefused(t *testing.T) {
	state := fsm.New()
	store := &failingStore{err: fmt.Errorf("propose: %w", cluster.ErrUnsupportedCommand)}
	svc := NewClusterService(Deps{Cluster: &fakeCluster{}, Registry: state, Store: store})
	if _, err := svc.RemoveNode(testCtx(t), &pb.RemoveNodeRequest{Id: "n3"}); err != nil {
		t.Fatalf("RemoveNode while a voter predates version 2: %v, want it done", err)
	}
}

type failingStore struct{ err error }

func (s *failingStore) Apply(context.Context, *pb.Command) (*pb.CommandResult, error) {
	return nil, s.err
}
func (s *failingStore) ReadBarrier(context.Context) error { return nil }
