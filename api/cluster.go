package api

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Cluster is the Raft node as ClusterService needs it.
type Cluster interface {
	Status() *pb.NodeStatus
	AddVoter(ctx context.Context, id, addr string) error
	RemoveServer(ctx context.Context, id string) error
	TransferLeadership(ctx context.Context, id string) (*pb.ServerRef, error)
}

// RunCounter is the replicated run counts (fsm.FSM.LastHour): what the
// runs did in the hour up to now, whatever the history limits keep.
type RunCounter interface {
	LastHour(now time.Time) *pb.RunCounts
}

type clusterService struct {
	pb.UnimplementedClusterServiceServer
	c      Cluster
	reg    Registry
	store  Store // nil: membership changes are not recorded
	audit  *AuditSwitch
	counts RunCounter // nil: no counts in the status
}

// NewClusterService serves ClusterService from d's Cluster and Registry
// (required; the registry supplies the fencing token the node status
// reports), and records every membership change it makes in the audit
// trail through d.Store after d.Audit's switch (nil Store: the changes are
// not recorded); d.Counts adds the last hour's run counts to the status.
func NewClusterService(d Deps) pb.ClusterServiceServer {
	return &clusterService{c: d.Cluster, reg: d.Registry, store: d.Store, audit: d.Audit, counts: d.Counts}
}

func (s *clusterService) GetStatus(context.Context, *pb.GetStatusRequest) (*pb.GetStatusResponse, error) {
	st := s.c.Status()
	if st == nil {
		return nil, status.Error(codes.Unavailable, "node status not available")
	}
	st = proto.CloneOf(st) // the caller may hand out a shared value
	st.FencingToken = s.reg.FencingToken()
	if s.counts != nil {
		st.LastHour = s.counts.LastHour(time.Now())
	}
	return &pb.GetStatusResponse{Status: st}, nil
}

func (s *clusterService) AddNode(ctx context.Context, req *pb.AddNodeRequest) (*pb.AddNodeResponse, error) {
	if err := validNodeID(req.GetId()); err != nil {
		return nil, err
	}
	if err := validAddress(req.GetAddress()); err != nil {
		return nil, err
	}
	s.audit.ensure(ctx)
	if err := s.c.AddVoter(ctx, req.GetId(), req.GetAddress()); err != nil {
		return nil, statusOf(err)
	}
	rm := &pb.RecordMembershipCommand{Action: auditJoin, NodeId: req.GetId(), Address: req.GetAddress()}
	if err := s.recordMembership(ctx, rm, true); err != nil {
		return nil, err
	}
	return &pb.AddNodeResponse{}, nil
}

func (s *clusterService) RemoveNode(ctx context.Context, req *pb.RemoveNodeRequest) (*pb.RemoveNodeResponse, error) {
	// Only presence is checked: an ID that exists must stay removable
	// whatever its shape.
	if req.GetId() == "" {
		return nil, fieldError("id", "required")
	}
	s.audit.ensure(ctx)
	if err := s.c.RemoveServer(ctx, req.GetId()); err != nil {
		return nil, statusOf(err)
	}
	// A node that removed itself has left the cluster: it will learn of
	// no next leader to record its removal through.
	waitLeader := req.GetId() != s.c.Status().GetId()
	rm := &pb.RecordMembershipCommand{Action: auditRemove, NodeId: req.GetId()}
	if err := s.recordMembership(ctx, rm, waitLeader); err != nil {
		return nil, err
	}
	return &pb.RemoveNodeResponse{}, nil
}

func (s *clusterService) TransferLeadership(ctx context.Context, req *pb.TransferLeadershipRequest) (*pb.TransferLeadershipResponse, error) {
	previous := s.c.Status().GetLeader().GetId()
	s.audit.ensure(ctx)
	leader, err := s.c.TransferLeadership(ctx, req.GetId())
	if err != nil {
		return nil, statusOf(err)
	}
	rm := &pb.RecordMembershipCommand{
		Action: auditTransfer, NodeId: leader.GetId(), Address: leader.GetAddress(), PreviousLeader: previous,
	}
	if err := s.recordMembership(ctx, rm, true); err != nil {
		return nil, err
	}
	return &pb.TransferLeadershipResponse{Leader: leader}, nil
}

// validNodeID and validAddress apply cluster's rules before any node is
// asked, so that a bad request names its field.
func validNodeID(id string) error {
	if err := cluster.ValidateID(id); err != nil {
		return fieldError("id", err.Error())
	}
	return nil
}

func validAddress(addr string) error {
	if err := cluster.ValidateAddr(addr); err != nil {
		return fieldError("address", err.Error())
	}
	return nil
}
