package api

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// RunLedger is this node's applied run ledger.
type RunLedger interface {
	Run(id string) (*pb.Run, error)
	// ListRuns returns the runs of job ("" for all), newest first, at most
	// limit of them.
	ListRuns(job string, limit int) []*pb.Run
}

const (
	defaultRunLimit = 20
	maxRunLimit     = 1000
	// maxRunIDLen bounds a run id: a job name plus a token or log index.
	maxRunIDLen = 256
)

type runService struct {
	pb.UnimplementedRunServiceServer
	barrier Barrier
	ledger  RunLedger
	hub     *RunHub
}

// NewRunService serves RunService: reads of the run ledger (linearizable
// after b's barrier unless stale) and watches fed by hub, which must be
// the observer of this node's FSM (nil: WatchRuns answers Unimplemented).
func NewRunService(b Barrier, l RunLedger, hub *RunHub) pb.RunServiceServer {
	return &runService{barrier: b, ledger: l, hub: hub}
}

func (s *runService) ListRuns(ctx context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	if err := validJobFilter(req.GetJob()); err != nil {
		return nil, err
	}
	if err := s.readBarrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	runs := s.ledger.ListRuns(req.GetJob(), runLimit(req.GetLimit()))
	return &pb.ListRunsResponse{Runs: runs}, nil
}

func runLimit(n uint32) int {
	switch {
	case n == 0:
		return defaultRunLimit
	case n > maxRunLimit:
		return maxRunLimit
	default:
		return int(n)
	}
}

func (s *runService) GetRun(ctx context.Context, req *pb.GetRunRequest) (*pb.GetRunResponse, error) {
	id := req.GetId()
	switch {
	case id == "":
		return nil, fieldError("id", "required")
	case len(id) > maxRunIDLen || !utf8.ValidString(id):
		return nil, fieldError("id", "not a run id: at most 256 bytes of UTF-8")
	}
	if err := s.readBarrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	run, err := s.ledger.Run(id)
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.GetRunResponse{Run: run}, nil
}

// WatchRuns streams the runs this node applies from now on. The response
// headers are sent once the watch is in place: a client that waits for
// them misses nothing committed after.
func (s *runService) WatchRuns(req *pb.WatchRunsRequest, stream grpc.ServerStreamingServer[pb.WatchRunsResponse]) error {
	if err := validJobFilter(req.GetJob()); err != nil {
		return err
	}
	if s.hub == nil {
		return status.Error(codes.Unimplemented, "WatchRuns: this node publishes no run changes")
	}
	w, cancel, err := s.hub.subscribe(req.GetJob())
	if err != nil {
		return err
	}
	defer cancel()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return statusOf(ctx.Err())
		case <-w.end:
			return w.err
		case r := <-w.ch:
			if err := stream.Send(&pb.WatchRunsResponse{Run: r}); err != nil {
				return err
			}
		}
	}
}

func (s *runService) readBarrier(ctx context.Context, stale bool) error {
	if stale {
		return nil
	}
	return statusOf(s.barrier.ReadBarrier(ctx))
}

// validJobFilter accepts "" (every job) or a valid job name.
func validJobFilter(job string) error {
	if job == "" {
		return nil
	}
	return validJobName("job", job)
}
