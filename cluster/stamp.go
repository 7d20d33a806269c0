package cluster

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The leader's clock is the FSM's only clock (DESIGN §2). The leader stamps
// every command it proposes for a client with Config.Now, whichever node
// received the request: a forwarded command carries no time the leader
// trusts, so a follower whose clock runs ahead can never move a cursor.
//
// FireBatch, CompleteBatch, RecordProgress and EndPause are the leading node's own: its scheduler
// proposes them through ApplyLocal, stamped with the scheduler's clock on
// that same node, and they never travel through Apply or forwarding, which
// carry registry and ACL writes only. CheckAlerts and RecordDeliveries are
// its alerter's, alike.

// forwardable refuses the commands that only the leader's own scheduler
// proposes. A new command kind of that sort must be added here.
func forwardable(cmd *pb.Command) error {
	switch cmd.GetKind().(type) {
	case *pb.Command_FireBatch:
		return fmt.Errorf("fire_batch: %w", ErrNotForwardable)
	case *pb.Command_CompleteBatch:
		return fmt.Errorf("complete_batch: %w", ErrNotForwardable)
	case *pb.Command_SetClusterVersion:
		return fmt.Errorf("set_cluster_version: %w", ErrNotForwardable) // the leader's own (clusterversion.go)
	case *pb.Command_RecordProgress:
		return fmt.Errorf("record_progress: %w", ErrNotForwardable) // times of the leader's own receipt
	case *pb.Command_CheckAlerts:
		return fmt.Errorf("check_alerts: %w", ErrNotForwardable) // stamped by the leader that judged it (alert/)
	case *pb.Command_RecordDeliveries:
		return fmt.Errorf("record_deliveries: %w", ErrNotForwardable)
	case *pb.Command_EndPause:
		return fmt.Errorf("end_pause: %w", ErrNotForwardable) // the scheduler's, at the pause's end
	}
	return nil
}

// stamp sets cmd's time to this node's clock; only the leader calls it.
func (n *Node) stamp(cmd *pb.Command) {
	cmd.ProposedAtUnixNano = n.cfg.Now().UnixNano()
}

// restamp is a forwarded command as this node, the leader, proposes it:
// decoded, checked to be forwardable, and stamped with its own clock. The
// decoded command also goes to the version check (admit), so the leader
// decodes a forwarded command once.
func (n *Node) restamp(data []byte) (*pb.Command, []byte, error) {
	var cmd pb.Command
	if err := proto.Unmarshal(data, &cmd); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrMalformedCommand, err)
	}
	if err := forwardable(&cmd); err != nil {
		return nil, nil, err
	}
	n.stamp(&cmd)
	out, err := proto.Marshal(&cmd)
	if err != nil {
		return nil, nil, fmt.Errorf("restamp: marshal command: %w", err)
	}
	return &cmd, out, nil
}
