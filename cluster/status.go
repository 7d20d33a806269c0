package cluster

import (
	"strings"
	"time"

	"github.com/hashicorp/raft"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Status is this node's own view of the cluster. FencingToken is left 0:
// the caller fills it from the FSM.
func (n *Node) Status() *pb.NodeStatus {
	st := &pb.NodeStatus{
		Id:             n.cfg.ID,
		Address:        n.cfg.Addr,
		State:          stateName(n.raft.State()),
		Term:           n.raft.CurrentTerm(),
		CommitIndex:    n.raft.CommitIndex(),
		AppliedIndex:   n.raft.AppliedIndex(),
		LastLogIndex:   n.raft.LastIndex(),
		CommandVersion: n.cfg.CommandVersion,
		ClusterVersion: n.clusterVersion(),
	}
	leaderID, leaderAddr := n.Leader()
	if leaderAddr != "" {
		st.Leader = &pb.ServerRef{Id: leaderID, Address: leaderAddr}
	}
	now := time.Now()
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		sv := &pb.Server{
			Id:       string(s.ID),
			Address:  string(s.Address),
			Suffrage: suffrage(s.Suffrage),
			Leader:   leaderAddr != "" && string(s.ID) == leaderID,
		}
		var last time.Time
		sv.Contact, last = n.contact(s.ID, leaderID, now)
		if !last.IsZero() {
			sv.LastContactUnixNano = last.UnixNano()
		}
		st.Servers = append(st.Servers, sv)
	}
	return st
}

// stateName spells states as the ops port and CLI show them.
func stateName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	default:
		return "shutdown"
	}
}

func suffrage(s raft.ServerSuffrage) string {
	switch s {
	case raft.Voter:
		return "voter"
	case raft.Nonvoter:
		return "nonvoter"
	case raft.Staging:
		return "staging"
	default:
		return strings.ToLower(s.String())
	}
}
