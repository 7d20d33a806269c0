package server

import (
	"context"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A leadership transfer and a removal made through ClusterService land in
// the audit trail that every node serves.
func TestMembershipChangesReachTheAuditTrail(t *testing.T) {
	servers := startCluster(t, 3)
	leader, followers := leaderOf(t, servers)
	conn := dialPlain(t, leader.Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	members := pb.NewClusterServiceClient(conn)

	moved, err := members.TransferLeadership(ctx, &pb.TransferLeadershipRequest{})
	if err != nil {
		t.Fatalf("TransferLeadership: %v", err)
	}
	var removed *Server
	for _, f := range followers {
		if f.cfg.ID != moved.GetLeader().GetId() {
			removed = f
		}
	}
	if _, err := members.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: removed.cfg.ID}); err != nil {
		t.Fatalf("RemoveNode(%s): %v", removed.cfg.ID, err)
	}

	recs, err := pb.NewAuditServiceClient(conn).ListAudit(ctx, &pb.ListAuditRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs.GetRecords() {
		if r.GetAction() == fsm.AuditLeaderTransfer || r.GetAction() == fsm.AuditMemberRemove {
			got = append(got, r.GetAction()+" "+r.GetChanges()[0].GetBefore()+">"+r.GetChanges()[0].GetAfter()+" by "+r.GetPrincipal())
		}
	}
	want := []string{
		fsm.AuditMemberRemove + " " + removed.cfg.ID + "> by anonymous",
		fsm.AuditLeaderTransfer + " " + leader.cfg.ID + ">" + moved.GetLeader().GetId() + " by anonymous",
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("membership records, newest first: %q, want %q", got, want)
	}
}

// Removing the leader itself takes the cluster's leader away before the
// removal's record is proposed. The removal is done, so it is reported
// done, and the next leader commits its record: an error here would have
// the operator retry a removal that already happened.
func TestRemovingTheLeaderIsRecordedByTheNext(t *testing.T) {
	servers := startCluster(t, 3)
	leader, followers := leaderOf(t, servers)
	conn := dialPlain(t, followers[0].Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	if _, err := pb.NewClusterServiceClient(conn).RemoveNode(ctx, &pb.RemoveNodeRequest{Id: leader.cfg.ID}); err != nil {
		t.Fatalf("RemoveNode(%s), the leader, through %s: %v", leader.cfg.ID, followers[0].cfg.ID, err)
	}
	recs, err := pb.NewAuditServiceClient(conn).ListAudit(ctx, &pb.ListAuditRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var removals []string
	for _, r := range recs.GetRecords() {
		if r.GetAction() == fsm.AuditMemberRemove {
			removals = append(removals, r.GetChanges()[0].GetBefore())
		}
	}
	if len(removals) != 1 || removals[0] != leader.cfg.ID {
		t.Fatalf("member_remove records: %q, want one of %s", removals, leader.cfg.ID)
	}
}
