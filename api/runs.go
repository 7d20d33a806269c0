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

// ScopedRunLedger is what RunService needs of the ledger to serve a token
// with a selector; a ledger without it serves such tokens nothing.
type ScopedRunLedger interface {
	// JobMatches reports whether the job exists and its labels include
	// selector.
	JobMatches(name string, selector map[string]string) bool
	// ListRunsMatching is ListRuns of the jobs JobMatches accepts.
	ListRunsMatching(job string, limit int, selector map[string]string) []*pb.Run
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
	store   Store
	audit   *AuditSwitch
}

// NewRunService serves RunService from d's Barrier and Ledger (required):
// reads of the run ledger, linearizable after the barrier unless stale;
// watches fed by d.Hub, which must be the observer of this node's FSM (nil:
// WatchRuns answers Unimplemented); cancels committed through d.Store
// (nil: CancelRun answers Unimplemented) after d.Audit's switch.
func NewRunService(d Deps) pb.RunServiceServer {
	d = d.withDefaults()
	return &runService{barrier: d.Barrier, ledger: d.Ledger, hub: d.Hub, store: d.Store, audit: d.Audit}
}

func (s *runService) ListRuns(ctx context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	if err := validJobFilter(req.GetJob()); err != nil {
		return nil, err
	}
	if err := s.readBarrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	sel := PrincipalFrom(ctx).Selector
	if len(sel) == 0 {
		return &pb.ListRunsResponse{Runs: s.ledger.ListRuns(req.GetJob(), runLimit(req.GetLimit()))}, nil
	}
	scoped, err := s.scoped()
	if err != nil {
		return nil, err
	}
	return &pb.ListRunsResponse{Runs: scoped.ListRunsMatching(req.GetJob(), runLimit(req.GetLimit()), sel)}, nil
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
	if err := validRunID(id); err != nil {
		return nil, err
	}
	if err := s.readBarrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	run, err := s.ledger.Run(id)
	if err != nil {
		return nil, statusOf(err)
	}
	visible, err := s.visible(ctx, run)
	if err != nil {
		return nil, err
	}
	if !visible {
		return nil, hiddenRun(id)
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
	ctx := stream.Context()
	if _, err := s.visible(ctx, nil); err != nil {
		return err
	}
	w, cancel, err := s.hub.subscribe(req.GetJob())
	if err != nil {
		return err
	}
	defer cancel()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return statusOf(ctx.Err())
		case <-w.end:
			return w.err
		case r := <-w.ch:
			if visible, _ := s.visible(ctx, r); !visible {
				continue
			}
			if err := stream.Send(&pb.WatchRunsResponse{Run: r}); err != nil {
				return err
			}
		}
	}
}

// CancelRun commits a cancel of an open run; the leader's scheduler stops
// its attempt when it applies it. The Store forwards it to the leader. The
// FSM refuses a run of a job outside the caller's scope as a missing one.
func (s *runService) CancelRun(ctx context.Context, req *pb.CancelRunRequest) (*pb.CancelRunResponse, error) {
	id := req.GetId()
	if err := validRunID(id); err != nil {
		return nil, err
	}
	if s.store == nil {
		return nil, status.Error(codes.Unimplemented, "CancelRun: this node commits no cancels")
	}
	s.audit.ensure(ctx)
	cmd := &pb.Command{
		Caller: PrincipalFrom(ctx).caller(),
		Kind:   &pb.Command_CancelRun{CancelRun: &pb.CancelRunCommand{RunId: id}},
	}
	res, err := s.store.Apply(ctx, cmd)
	if err != nil {
		return nil, statusOf(err)
	}
	if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		return nil, resultStatus(res)
	}
	return &pb.CancelRunResponse{Run: res.GetRun()}, nil
}

func validRunID(id string) error {
	switch {
	case id == "":
		return fieldError("id", "required")
	case len(id) > maxRunIDLen || !utf8.ValidString(id):
		return fieldError("id", "not a run id: at most 256 bytes of UTF-8")
	}
	return nil
}

// visible reports whether the caller may see run (nil: whether it may see
// any run at all). A token with a selector sees the runs of the jobs in
// its scope, judged by the jobs' labels now.
func (s *runService) visible(ctx context.Context, run *pb.Run) (bool, error) {
	sel := PrincipalFrom(ctx).Selector
	if len(sel) == 0 {
		return true, nil
	}
	scoped, err := s.scoped()
	if err != nil || run == nil {
		return err == nil, err
	}
	return scoped.JobMatches(run.GetJob(), sel), nil
}

func (s *runService) scoped() (ScopedRunLedger, error) {
	if l, ok := s.ledger.(ScopedRunLedger); ok {
		return l, nil
	}
	return nil, status.Error(codes.PermissionDenied, "this node cannot limit runs to an ACL token's selector")
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
