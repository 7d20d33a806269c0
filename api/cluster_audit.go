package api

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/backoff"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// recordMembership commits the audit record of a membership change that
// succeeded. A Raft configuration change is no command, so its record is an
// entry of its own, committed through the leader after it. If that fails the
// caller learns that the change was made but not recorded, rather than
// nothing: a trail that silently misses a change is worse than an error.
// The caller turns the trail on before the change (AuditSwitch.ensure),
// while the leader it may remove still leads. The record is proposed even
// if this node's trail looks off: the switch may just have turned it on
// through the leader, ahead of this node's state, and with the trail off
// the command changes nothing. waitLeader: while no node leads, wait for
// the next leader to be elected.
func (s *clusterService) recordMembership(ctx context.Context, rm *pb.RecordMembershipCommand, waitLeader bool) error {
	if s.store == nil {
		return nil
	}
	cmd := &pb.Command{
		Caller: PrincipalFrom(ctx).caller(),
		Kind:   &pb.Command_RecordMembership{RecordMembership: rm},
	}
	apply := s.store.Apply
	if waitLeader {
		apply = s.applyRecord
	}
	res, err := apply(ctx, cmd)
	if errors.Is(err, cluster.ErrUnsupportedCommand) {
		// A voter predates command version 2, so the trail is off, as for
		// every other write during the upgrade.
		return nil
	}
	if err == nil && res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		err = resultStatus(res)
	}
	if err != nil {
		st := status.Convert(statusOf(err))
		return status.Errorf(st.Code(), "%s of %s done, but its audit record was not committed: %s",
			rm.GetAction(), rm.GetNodeId(), st.Message())
	}
	return nil
}

// recordLeaderWait bounds how long a membership record waits for a
// leader, within the caller's deadline: a change that removed the leader
// took it away, and the record waits for the next one's election.
const recordLeaderWait = 10 * time.Second

// applyRecord proposes a membership record, again while no node leads.
// Only those refusals are retried: they wrote nothing, so the record is
// not doubled.
func (s *clusterService) applyRecord(ctx context.Context, cmd *pb.Command) (res *pb.CommandResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, recordLeaderWait)
	defer cancel()
	err = backoff.Retry(ctx, 20*time.Millisecond, 500*time.Millisecond, noLeader, func() error {
		res, err = s.store.Apply(ctx, cmd)
		return err
	})
	return res, err
}

func noLeader(err error) bool {
	return errors.Is(err, cluster.ErrNoLeader) || errors.Is(err, cluster.ErrNotLeader)
}

// Actions of the membership records, as the FSM names them.
const (
	auditJoin     = fsm.AuditMemberJoin
	auditRemove   = fsm.AuditMemberRemove
	auditTransfer = fsm.AuditLeaderTransfer
)
