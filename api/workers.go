package api

import (
	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// WorkerHub holds the streams of the workers connected to this node while
// it leads (scheduler/remote.Hub).
type WorkerHub interface {
	Serve(stream pb.WorkerService_ConnectServer) error
}

// LeaderInfo says whether this node leads, and which node does.
type LeaderInfo interface {
	IsLeader() bool
	Leader() (id, addr string)
}

// workerService serves WorkerService.Connect: the leader hands the stream
// to its hub; any other node answers NOT_LEADER with the leader's address,
// so that the worker reconnects there.
type workerService struct {
	pb.UnimplementedWorkerServiceServer
	hub    WorkerHub
	leader LeaderInfo
}

// NewWorkerService serves WorkerService over d's Workers and Leader.
func NewWorkerService(d Deps) pb.WorkerServiceServer {
	return &workerService{hub: d.Workers, leader: d.Leader}
}

// Connect implements pb.WorkerServiceServer.
func (s *workerService) Connect(stream pb.WorkerService_ConnectServer) error {
	if !s.leader.IsLeader() {
		return s.notLeader()
	}
	err := s.hub.Serve(stream)
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
