package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Actions of the audit records of membership changes. Membership changes
// are Raft configuration changes, not commands: the API commits a
// record_membership after each one succeeded.
const (
	AuditMemberJoin     = "member_join"
	AuditMemberRemove   = "member_remove"
	AuditLeaderTransfer = "leader_transfer"
)

// recordMembership appends the record of a membership change while the
// trail is on and changes nothing else; with the trail off it is a no-op,
// as every audited write's record is.
func recordMembership(s *state, c *pb.Command, e entry) (outcome, error) {
	rm := c.GetRecordMembership()
	var changes []*pb.AuditChange
	switch rm.GetAction() {
	case AuditMemberJoin:
		changes = []*pb.AuditChange{{Field: "node_id", After: rm.GetNodeId()}, {Field: "address", After: rm.GetAddress()}}
	case AuditMemberRemove:
		changes = []*pb.AuditChange{{Field: "node_id", Before: rm.GetNodeId()}}
	case AuditLeaderTransfer:
		changes = []*pb.AuditChange{{Field: "leader", Before: rm.GetPreviousLeader(), After: rm.GetNodeId()},
			{Field: "address", After: rm.GetAddress()}}
	default:
		return outcome{}, fail(ErrInvalid, "record_membership.action must be %s, %s or %s, got %q",
			AuditMemberJoin, AuditMemberRemove, AuditLeaderTransfer, rm.GetAction())
	}
	if rm.GetNodeId() == "" {
		return outcome{}, fail(ErrInvalid, "record_membership.node_id is required")
	}
	if s.audit.on() {
		s.appendRecord(e, &pb.AuditRecord{Action: rm.GetAction(), Changes: capChanges(changes)}, nil, nil)
	}
	return outcome{}, nil
}
