package cluster

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Reasons of the ErrorInfo a node attaches to what it refuses another node,
// besides ReasonNotLeader.
const (
	reasonShutdown      = "SHUTDOWN"
	reasonIndeterminate = "OUTCOME_UNKNOWN"
)

// RegisterInternal serves node-to-node forwarding on s. Every method but
// NodeInfo acts only on the leader and never forwards again: a request
// travels at most one hop. Who may call it, NodeInfo included: on a TLS
// port only other nodes (a certificate from the CA naming pki.NodeSAN, see
// internal_guard.go); in plaintext anyone who reaches the port, which is
// why plaintext is for loopback or --insecure.
func RegisterInternal(s *grpc.Server, n *Node) {
	impl := &internalServer{n: n}
	if n.tls {
		s.RegisterService(guardedInternal(pb.InternalService_ServiceDesc), impl)
		return
	}
	pb.RegisterInternalServiceServer(s, impl)
}

type internalServer struct {
	pb.UnimplementedInternalServiceServer
	n *Node
}

// Apply proposes a command a follower forwarded, stamped with this
// leader's clock. It carries registry writes only: the scheduler's own
// commands are refused (PermissionDenied), and so are bytes that do not
// decode (InvalidArgument).
func (s *internalServer) Apply(ctx context.Context, req *pb.ApplyRequest) (*pb.ApplyResponse, error) {
	cmd, data, err := s.n.restamp(req.GetCommand())
	if err != nil {
		return nil, s.n.statusError(err)
	}
	res, idx, err := s.n.applyLocal(ctx, cmd, data)
	if err != nil {
		return nil, s.n.statusError(err)
	}
	return &pb.ApplyResponse{Result: res, Index: idx}, nil
}

func (s *internalServer) ReadIndex(ctx context.Context, req *pb.ReadIndexRequest) (*pb.ReadIndexResponse, error) {
	idx, err := s.n.readIndex(ctx)
	if err != nil {
		return nil, s.n.statusError(err)
	}
	if req.GetCommitIndex() < idx {
		s.n.AnnounceCommit(ctx)
	}
	return &pb.ReadIndexResponse{Index: idx}, nil
}

func (s *internalServer) AddVoter(ctx context.Context, req *pb.AddVoterRequest) (*pb.AddVoterResponse, error) {
	if err := s.n.addVoterLocal(ctx, req.GetId(), req.GetAddress()); err != nil {
		return nil, s.n.statusError(err)
	}
	return &pb.AddVoterResponse{}, nil
}

func (s *internalServer) RemoveServer(ctx context.Context, req *pb.RemoveServerRequest) (*pb.RemoveServerResponse, error) {
	if err := s.n.removeServerLocal(ctx, req.GetId()); err != nil {
		return nil, s.n.statusError(err)
	}
	return &pb.RemoveServerResponse{}, nil
}

func (s *internalServer) TransferLeadership(ctx context.Context, req *pb.InternalServiceTransferLeadershipRequest) (*pb.InternalServiceTransferLeadershipResponse, error) {
	ref, err := s.n.transferLocal(ctx, req.GetId())
	if err != nil {
		return nil, s.n.statusError(err)
	}
	return &pb.InternalServiceTransferLeadershipResponse{Id: ref.GetId(), Address: ref.GetAddress()}, nil
}

// NodeInfo answers on every node, leader or not: it is how the leader
// learns which command versions a voter applies (versions.go).
func (s *internalServer) NodeInfo(context.Context, *pb.NodeInfoRequest) (*pb.NodeInfoResponse, error) {
	return &pb.NodeInfoResponse{Id: s.n.cfg.ID, CommandVersion: s.n.cfg.CommandVersion}, nil
}

// statusError turns a local error into the gRPC status forwardError decodes.
func (n *Node) statusError(err error) error {
	switch {
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNoLeader):
		id, addr := n.Leader()
		if addr == "" {
			if last := n.lastLeader.Load(); last != nil {
				id, addr = last.Id, last.Address
			}
		}
		return NotLeaderStatus(err.Error(), id, addr)
	case errors.Is(err, ErrShutdown):
		return withInfo(codes.Unavailable, err.Error(), reasonShutdown, nil)
	case errors.Is(err, ErrIndeterminate):
		return withInfo(codes.Aborted, err.Error(), reasonIndeterminate, nil)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.FromContextError(err).Err()
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrServerExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, ErrInvalidConfig), errors.Is(err, ErrMalformedCommand):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrNotForwardable):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, ErrUnsupportedCommand):
		return status.Error(codes.FailedPrecondition, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}
