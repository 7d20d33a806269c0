package api

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
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
