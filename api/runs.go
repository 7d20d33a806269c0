package api

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// RunLedger is this node's applied run ledger (fsm.FSM).
type RunLedger interface {
	// Run returns a run, marked job_deleted when no live job owns it.
	Run(id string) (*pb.Run, error)
	// RunsPage returns the page of runs q selects, newest first, marked
	// as Run marks them.
	RunsPage(q fsm.RunQuery) fsm.RunPage
	// RunInScope reports whether run belongs to a live job whose labels
	// include selector (any live job's, for an empty selector).
	RunInScope(run *pb.Run, selector map[string]string) bool
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
	chains  ChainGraph
}

// NewRunService serves RunService from d's Barrier and Ledger (required):
// reads of the run ledger, linearizable after the barrier unless stale;
// watches fed by d.Hub, which must be the observer of this node's FSM (nil:
// WatchRuns answers Unimplemented); cancels committed through d.Store
// (nil: CancelRun answers Unimplemented) after d.Audit's switch; a run's
// children (its downstream runs) from d.Chains (nil: none).
func NewRunService(d Deps) pb.RunServiceServer {
	d = d.withDefaults()
	return &runService{barrier: d.Barrier, ledger: d.Ledger, hub: d.Hub, store: d.Store, audit: d.Audit, chains: d.Chains}
}

func (s *runService) ListRuns(ctx context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	if err := validJobFilter(req.GetJob()); err != nil {
		return nil, err
	}
	after, err := decodeRunPageToken(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	if err := s.readBarrier(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	page := s.ledger.RunsPage(fsm.RunQuery{
		Job:      req.GetJob(),
		Kind:     req.GetKind(),
		After:    after,
		Limit:    runLimit(req.GetLimit()),
		Selector: PrincipalFrom(ctx).Selector,
		MaxScan:  maxRunScan,
	})
	return &pb.ListRunsResponse{Runs: page.Runs, NextPageToken: encodeRunPageToken(page.Next)}, nil
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
	if !s.visible(ctx, run) {
		return nil, hiddenRun(id)
	}
	run.Children = s.children(ctx, id)
	return &pb.GetRunResponse{Run: run}, nil
}

// children are the runs the run fired or that stand for its sets (its
// downstream), those the caller may see.
func (s *runService) children(ctx context.Context, id string) []*pb.RunRef {
	if s.chains == nil {
		return nil
	}
	var out []*pb.RunRef
	for _, ref := range s.chains.ChildRuns(id) {
		if r, err := s.ledger.Run(ref.GetRunId()); err == nil && s.visible(ctx, r) {
			out = append(out, ref)
		}
	}
	return out
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
			if r = s.watched(ctx, r); r == nil {
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

// visible reports whether the caller may see run. A token with a selector
// sees the runs of the live jobs in its scope, judged by the jobs' labels
// now, and of each job only its own runs, not those a deleted job of the
// same name left (fsm/history.go). A caller without one sees every run;
// the ledger marks those of deleted jobs job_deleted.
func (s *runService) visible(ctx context.Context, run *pb.Run) bool {
	sel := PrincipalFrom(ctx).Selector
	return len(sel) == 0 || s.ledger.RunInScope(run, sel)
}

// watched is the hub's run r as the caller may see it, marked as the
// ledger marks runs, or nil. The hub's runs are shared between watchers:
// a marked one is a copy.
func (s *runService) watched(ctx context.Context, r *pb.Run) *pb.Run {
	switch {
	case !s.visible(ctx, r):
		return nil
	case len(PrincipalFrom(ctx).Selector) > 0 || s.ledger.RunInScope(r, nil):
		return r
	}
	c := proto.CloneOf(r)
	c.JobDeleted = true
	return c
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
