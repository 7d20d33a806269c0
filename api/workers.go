package api

import (
	"context"
	"time"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// WorkerHub holds the streams of the workers connected to this node while
// it leads (scheduler/remote.Hub), each with what its token grants.
type WorkerHub interface {
	Serve(stream pb.WorkerService_ConnectServer, grant remote.Grant) error
	Poll(ctx context.Context, grant remote.Grant, req remote.PollRequest) ([]*pb.AttemptOffer, error)
	Heartbeat(grant remote.Grant, b remote.Beat) (until time.Time, lease time.Duration, err error)
	Complete(grant remote.Grant, o *pb.WorkerOutcome) error
}

// LeaderInfo says whether this node leads, and which node does.
type LeaderInfo interface {
	IsLeader() bool
	Leader() (id, addr string)
}

// workerService serves WorkerService. Connect: the leader hands the stream
// to its hub; any other node answers NOT_LEADER with the leader's address,
// so that the worker reconnects there. The HTTP protocol's unary calls
// (worker_http.go): any node takes them, and a follower forwards them.
type workerService struct {
	pb.UnimplementedWorkerServiceServer
	hub        WorkerHub
	leader     LeaderInfo
	leadership Leadership
}

// NewWorkerService serves WorkerService over d's Workers, Leader and
// Leadership (forwarding; nil: a follower answers NOT_LEADER).
func NewWorkerService(d Deps) pb.WorkerServiceServer {
	return &workerService{hub: d.Workers, leader: d.Leader, leadership: d.Leadership}
}

// Connect implements pb.WorkerServiceServer.
func (s *workerService) Connect(stream pb.WorkerService_ConnectServer) error {
	if !s.leader.IsLeader() {
		return s.notLeader()
	}
	err := s.hub.Serve(stream, workerGrant(PrincipalFrom(stream.Context())))
	if err != nil && !s.leader.IsLeader() {
		// Dropped because this node stopped leading: say where to go.
		return s.notLeader()
	}
	return statusOf(err)
}

func (s *workerService) notLeader() error {
	id, addr := s.leader.Leader()
	return cluster.NotLeaderStatus("this node does not lead: workers connect to the leader", id, addr)
}

// workerGrant is what the caller's token lets a worker session do: a worker
// token, its pools and concurrency cap; a management token, or any caller
// with ACLs off, any pool. A worker token made before command version 3
// names no pool and reaches any pool, as it did then (docs/acl.md).
func workerGrant(p Principal) remote.Grant {
	g := remote.Grant{Token: p.Accessor}
	if p.Role == pb.AclRole_ACL_ROLE_WORKER {
		g.Pools, g.MaxConcurrency = p.Pools, int(p.MaxConcurrency)
	}
	return g
}
