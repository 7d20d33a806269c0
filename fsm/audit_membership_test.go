package fsm_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func membershipCmd(action, id, addr, previous string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_RecordMembership{RecordMembership: &pb.RecordMembershipCommand{
		Action: action, NodeId: id, Address: addr, PreviousLeader: previous,
	}}}
}

func TestAuditRecordsMembershipChanges(t *testing.T) {
	h := newAuditHarness(t, 10)
	h.mustOK(as("root", nil, membershipCmd(fsm.AuditMemberJoin, "n4", "10.0.0.4:7001", "")))
	r := h.lastAudit()
	if r.GetAction() != fsm.AuditMemberJoin || r.GetPrincipal() != "root" || r.GetJob() != "" || r.GetAtUnixNano() != h.now.UnixNano() {
		t.Fatalf("join record %v", r)
	}
	wantChanges(t, r, `node_id:  → n4`, `address:  → 10.0.0.4:7001`)

	h.mustOK(as("root", nil, membershipCmd(fsm.AuditLeaderTransfer, "n2", "10.0.0.2:7001", "n1")))
	wantChanges(t, h.lastAudit(), `leader: n1 → n2`, `address:  → 10.0.0.2:7001`)

	h.mustOK(as("ops-cert", nil, membershipCmd(fsm.AuditMemberRemove, "n4", "", "")))
	r = h.lastAudit()
	if r.GetAction() != fsm.AuditMemberRemove || r.GetPrincipal() != "ops-cert" {
		t.Fatalf("remove record %v", r)
	}
	wantChanges(t, r, `node_id: n4 → `)
	if n := len(h.audit()); n != 4 { // set_audit's own record and three
		t.Fatalf("%d records, want 4", n)
	}

	// The trail survives a snapshot with them.
	g := fsm.New()
	if err := restore(g, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if want, got := h.f.ListAudit(fsm.AuditQuery{}), g.ListAudit(fsm.AuditQuery{}); len(got) != len(want) || !proto.Equal(got[0], want[0]) {
		t.Fatalf("restored trail %v, want %v", got, want)
	}
}

func TestRecordMembershipWithTheTrailOffChangesNothing(t *testing.T) {
	h := newHarness(t)
	before := h.f.StateHash()
	h.mustOK(as("root", nil, membershipCmd(fsm.AuditMemberJoin, "n4", "10.0.0.4:7001", "")))
	if recs := h.audit(); len(recs) != 0 {
		t.Fatalf("trail off: %d records, want none", len(recs))
	}
	if h.f.StateHash() != before {
		t.Fatal("record_membership with the trail off changed the state")
	}
}

func TestRecordMembershipRefusesABadRecord(t *testing.T) {
	h := newAuditHarness(t, 10)
	seq := h.lastAudit().GetSeq()
	for name, c := range map[string]*pb.Command{
		"unknown action": membershipCmd("member_promote", "n4", "", ""),
		"no node id":     membershipCmd(fsm.AuditMemberRemove, "", "", ""),
	} {
		h.mustFail(c, codeInvalid, fsm.ErrInvalid)
		if h.lastAudit().GetSeq() != seq {
			t.Fatalf("%s: a refused record_membership was recorded", name)
		}
	}
}

func TestRecordMembershipIsCommandVersion2(t *testing.T) {
	if v := fsm.VersionOf(membershipCmd(fsm.AuditMemberJoin, "n4", "a:1", "")); v != 2 {
		t.Fatalf("VersionOf(record_membership) = %d, want 2: a voter of version 1 must not meet it", v)
	}
}
