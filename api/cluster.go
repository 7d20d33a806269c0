package api

import (
	"context"
	"net"
	"regexp"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Cluster is the Raft node as ClusterService needs it.
type Cluster interface {
	Status() *pb.NodeStatus
	AddVoter(ctx context.Context, id, addr string) error
	RemoveServer(ctx context.Context, id string) error
	TransferLeadership(ctx context.Context, id string) (*pb.ServerRef, error)
}

// nodeIDPattern is the shape of a node ID: the same as a job name, so IDs
// are safe in paths, metrics labels and flags.
var nodeIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

type clusterService struct {
	pb.UnimplementedClusterServiceServer
	c   Cluster
	reg Registry
}

// NewClusterService serves ClusterService; r supplies the fencing token that
// the node status reports.
func NewClusterService(c Cluster, r Registry) pb.ClusterServiceServer {
	return &clusterService{c: c, reg: r}
}

func (s *clusterService) GetStatus(context.Context, *pb.GetStatusRequest) (*pb.GetStatusResponse, error) {
	st := s.c.Status()
	if st == nil {
		return nil, status.Error(codes.Unavailable, "node status not available")
	}
	st = proto.CloneOf(st) // the caller may hand out a shared value
	st.FencingToken = s.reg.FencingToken()
	return &pb.GetStatusResponse{Status: st}, nil
}

func (s *clusterService) AddNode(ctx context.Context, req *pb.AddNodeRequest) (*pb.AddNodeResponse, error) {
	if err := validNodeID(req.GetId()); err != nil {
		return nil, err
	}
	if err := validAddress(req.GetAddress()); err != nil {
		return nil, err
	}
	if err := s.c.AddVoter(ctx, req.GetId(), req.GetAddress()); err != nil {
		return nil, statusOf(err)
	}
	return &pb.AddNodeResponse{}, nil
}

func (s *clusterService) RemoveNode(ctx context.Context, req *pb.RemoveNodeRequest) (*pb.RemoveNodeResponse, error) {
	// Only presence is checked: an ID that exists must stay removable
	// whatever its shape.
	if req.GetId() == "" {
		return nil, fieldError("id", "required")
	}
	if err := s.c.RemoveServer(ctx, req.GetId()); err != nil {
		return nil, statusOf(err)
	}
	return &pb.RemoveNodeResponse{}, nil
}

func (s *clusterService) TransferLeadership(ctx context.Context, req *pb.TransferLeadershipRequest) (*pb.TransferLeadershipResponse, error) {
	leader, err := s.c.TransferLeadership(ctx, req.GetId())
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.TransferLeadershipResponse{Leader: leader}, nil
}

func validNodeID(id string) error {
	if id == "" {
		return fieldError("id", "required")
	}
	if !nodeIDPattern.MatchString(id) {
		return fieldError("id", "invalid node ID "+strconv.Quote(id)+": want [a-z0-9][a-z0-9._-]{0,62}")
	}
	return nil
}

// validAddress wants host:port with a non-empty host and a port in 1-65535.
func validAddress(addr string) error {
	const want = "want host:port, e.g. 10.0.0.4:7001"
	if addr == "" {
		return fieldError("address", "required ("+want+")")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fieldError("address", "invalid address "+strconv.Quote(addr)+": "+want)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fieldError("address", "invalid port "+strconv.Quote(port)+": want 1-65535")
	}
	return nil
}
