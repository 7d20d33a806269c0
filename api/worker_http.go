package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// The HTTP worker protocol (docs/workers.md): PollAttempts, HeartbeatAttempt,
// CompleteAttempt and BatchCompleteAttempts. Any node takes them; a follower forwards each call to
// the leader, whose hub holds the attempts and their leases.

// maxOutcomeDetail bounds the detail an HTTP worker reports.
const maxOutcomeDetail = 4096

// outcomeNames are the outcomes an HTTP worker reports, by their wire
// names.
var outcomeNames = map[string]pb.RunState{
	"succeeded":         pb.RunState_RUN_STATE_SUCCEEDED,
	"failed":            pb.RunState_RUN_STATE_FAILED,
	"fenced":            pb.RunState_RUN_STATE_FENCED,
	"deadline_exceeded": pb.RunState_RUN_STATE_DEADLINE_EXCEEDED,
	"cancelled":         pb.RunState_RUN_STATE_CANCELLED,
}

// PollAttempts implements pb.WorkerServiceServer.
func (s *workerService) PollAttempts(ctx context.Context, req *pb.PollAttemptsRequest) (*pb.PollAttemptsResponse, error) {
	poll, err := checkPoll(req)
	if err != nil {
		return nil, err
	}
	return onHubLeader(ctx, s, func(c pb.WorkerServiceClient, fctx context.Context) (*pb.PollAttemptsResponse, error) {
		return c.PollAttempts(fctx, req)
	}, func(g remote.Grant) (*pb.PollAttemptsResponse, error) {
		offers, err := s.hub.Poll(ctx, g, poll)
		return &pb.PollAttemptsResponse{Offers: offers}, err
	})
}

// HeartbeatAttempt implements pb.WorkerServiceServer.
func (s *workerService) HeartbeatAttempt(ctx context.Context, req *pb.HeartbeatAttemptRequest) (*pb.HeartbeatAttemptResponse, error) {
	if err := checkBeat(req); err != nil {
		return nil, err
	}
	return onHubLeader(ctx, s, func(c pb.WorkerServiceClient, fctx context.Context) (*pb.HeartbeatAttemptResponse, error) {
		return c.HeartbeatAttempt(fctx, req)
	}, func(g remote.Grant) (*pb.HeartbeatAttemptResponse, error) {
		until, lease, err := s.hub.Heartbeat(g, remote.Beat{
			RunID: req.GetRunId(), Token: req.GetToken(), Progress: req.Progress, Message: req.Message,
		})
		return &pb.HeartbeatAttemptResponse{LeaseExpires: timestamppb.New(until), Lease: durationpb.New(lease)}, err
	})
}

// CompleteAttempt implements pb.WorkerServiceServer.
func (s *workerService) CompleteAttempt(ctx context.Context, req *pb.CompleteAttemptRequest) (*pb.CompleteAttemptResponse, error) {
	o, err := checkCompletion(req)
	if err != nil {
		return nil, err
	}
	return onHubLeader(ctx, s, func(c pb.WorkerServiceClient, fctx context.Context) (*pb.CompleteAttemptResponse, error) {
		return c.CompleteAttempt(fctx, req)
	}, func(g remote.Grant) (*pb.CompleteAttemptResponse, error) {
		return &pb.CompleteAttemptResponse{}, s.hub.Complete(g, o)
	})
}

// BatchCompleteAttempts implements pb.WorkerServiceServer: each outcome is
// taken as CompleteAttempt takes one, and answered in its own result.
func (s *workerService) BatchCompleteAttempts(ctx context.Context, req *pb.BatchCompleteAttemptsRequest) (*pb.BatchCompleteAttemptsResponse, error) {
	outcomes, err := checkCompletions(req)
	if err != nil {
		return nil, err
	}
	return onHubLeader(ctx, s, func(c pb.WorkerServiceClient, fctx context.Context) (*pb.BatchCompleteAttemptsResponse, error) {
		return c.BatchCompleteAttempts(fctx, req)
	}, func(g remote.Grant) (*pb.BatchCompleteAttemptsResponse, error) {
		results := make([]*pb.CompleteResult, len(outcomes))
		for i, o := range outcomes {
			results[i] = completeResult(s.hub.Complete(g, o))
		}
		// A hub that lost leadership midway answers not_held for what
		// the next leader may still hold: the worker must ask it instead.
		if !s.leader.IsLeader() {
			return nil, errLostLeadership
		}
		return &pb.BatchCompleteAttemptsResponse{Results: results}, nil
	})
}

// errLostLeadership stands for NOT_LEADER, which hubError answers once
// this node no longer leads.
var errLostLeadership = errors.New("leadership lost during the call")

// completeResult is what CompleteAttempt's answer is, as a batch's result.
func completeResult(err error) *pb.CompleteResult {
	if err == nil {
		return &pb.CompleteResult{Taken: true}
	}
	if why, ok := remote.SupersededWhy(err); ok {
		return &pb.CompleteResult{Superseded: why}
	}
	return &pb.CompleteResult{Error: status.Convert(err).Message()}
}

// onHubLeader runs a call on this node's hub, with what the caller's token
// grants, if it leads; a follower forwards it to the leader instead.
func onHubLeader[Resp any](ctx context.Context, s *workerService,
	forward func(pb.WorkerServiceClient, context.Context) (Resp, error), here func(remote.Grant) (Resp, error)) (Resp, error) {
	var none Resp
	if !s.leader.IsLeader() {
		c, fctx, err := s.leaderClient(ctx)
		if err != nil {
			return none, err
		}
		resp, err := forward(c, fctx)
		if err != nil {
			return none, statusOf(err)
		}
		return resp, nil
	}
	resp, err := here(workerGrant(PrincipalFrom(ctx)))
	if err != nil {
		return none, s.hubError(err)
	}
	return resp, nil
}

// leaderClient is the leader's WorkerService and the context of a call
// forwarded to it, which carries the caller's token. A call that was
// forwarded here already is answered NOT_LEADER instead: a call is
// forwarded at most once.
func (s *workerService) leaderClient(ctx context.Context) (pb.WorkerServiceClient, context.Context, error) {
	if isForwarded(ctx) || s.leadership == nil {
		return nil, ctx, s.notLeader()
	}
	conn, err := s.leadership.LeaderConn()
	if err != nil {
		return nil, ctx, statusOf(err)
	}
	return pb.NewWorkerServiceClient(conn), forwardIdentity(ctx), nil
}

// hubError is the status of a refusal by the hub: NOT_LEADER once this
// node no longer leads (the hub dropped the worker for it).
func (s *workerService) hubError(err error) error {
	if !s.leader.IsLeader() {
		return s.notLeader()
	}
	return statusOf(err)
}

// fieldProblems collects the rules a request breaks, to refuse it whole.
type fieldProblems []*errdetails.BadRequest_FieldViolation

func (p *fieldProblems) add(field, rule string) {
	*p = append(*p, &errdetails.BadRequest_FieldViolation{Field: field, Description: rule})
}

func (p fieldProblems) err() error {
	if len(p) == 0 {
		return nil
	}
	msgs := make([]string, len(p))
	for i, v := range p {
		msgs[i] = v.GetField() + ": " + v.GetDescription()
	}
	return badRequest(strings.Join(msgs, "; "), p...)
}

// checkPoll checks a poll's fields and fills in its defaults.
func checkPoll(req *pb.PollAttemptsRequest) (remote.PollRequest, error) {
	var p fieldProblems
	if jobspec.ValidateName(req.GetId()) != nil {
		p.add("id", jobspec.NameRule)
	}
	switch pool := req.GetPool(); {
	case pool == "":
		p.add("pool", "required")
	case jobspec.ValidateName(pool) != nil:
		p.add("pool", jobspec.NameRule)
	}
	var tagProblems *jobspec.ValidationError
	if len(req.GetTags()) > remote.MaxTags {
		p.add("tags", fmt.Sprintf("at most %d", remote.MaxTags))
	} else if errors.As(jobspec.ValidateLabels("tags", req.GetTags()), &tagProblems) {
		for _, v := range tagProblems.Violations {
			p.add(v.Field, v.Rule)
		}
	}
	switch hs := req.GetHandlers(); {
	case len(hs) == 0:
		p.add("handlers", "name at least one handler: an HTTP worker runs handlers")
	case len(hs) > remote.MaxHandlers:
		p.add("handlers", fmt.Sprintf("at most %d", remote.MaxHandlers))
	default:
		for i, h := range hs {
			if !jobspec.ValidHandler(h) {
				p.add(fmt.Sprintf("handlers[%d]", i), jobspec.HandlerRule)
			}
		}
	}
	n := int(req.GetMax())
	if n == 0 {
		n = 1
	} else if n > remote.MaxPollOffers {
		p.add("max", fmt.Sprintf("at most %d", remote.MaxPollOffers))
	}
	wait := remote.DefaultPollWait
	if w := req.GetWait(); w != nil {
		switch d := w.AsDuration(); {
		case w.CheckValid() != nil || d < 0:
			p.add("wait", "must be a duration of 0 or more")
		case d > remote.MaxPollWait:
			p.add("wait", fmt.Sprintf("at most %s", remote.MaxPollWait))
		default:
			wait = d
		}
	}
	return remote.PollRequest{
		ID: req.GetId(), Pool: req.GetPool(), Tags: req.GetTags(), Handlers: req.GetHandlers(), Max: n, Wait: wait,
	}, p.err()
}

// checkAttempt checks the fields that name an attempt.
func checkAttempt(p *fieldProblems, runID string, token uint64) {
	if runID == "" || len(runID) > maxRunIDLen {
		p.add("run_id", fmt.Sprintf("required, at most %d bytes", maxRunIDLen))
	}
	if token == 0 {
		p.add("token", "required: the offer's token")
	}
}

func checkBeat(req *pb.HeartbeatAttemptRequest) error {
	var p fieldProblems
	checkAttempt(&p, req.GetRunId(), req.GetToken())
	if req.Progress != nil && req.GetProgress() > 100 {
		p.add("progress", "between 0 and 100")
	}
	if len(req.GetMessage()) > remote.MaxProgressMessage {
		p.add("message", fmt.Sprintf("at most %d bytes", remote.MaxProgressMessage))
	}
	return p.err()
}

// checkCompletion checks an outcome and turns it into the hub's form: a
// non-zero exit code joins the detail.
func checkCompletion(req *pb.CompleteAttemptRequest) (*pb.WorkerOutcome, error) {
	var p fieldProblems
	o := completion(&p, "", req)
	return o, p.err()
}

// checkCompletions checks a batch's outcomes, naming each one's fields by
// its index: one bad outcome refuses them all.
func checkCompletions(req *pb.BatchCompleteAttemptsRequest) ([]*pb.WorkerOutcome, error) {
	var p fieldProblems
	n := len(req.GetOutcomes())
	if n == 0 || n > remote.MaxPollOffers {
		p.add("outcomes", fmt.Sprintf("1 to %d outcomes", remote.MaxPollOffers))
		return nil, p.err()
	}
	outcomes := make([]*pb.WorkerOutcome, n)
	for i, req := range req.GetOutcomes() {
		outcomes[i] = completion(&p, fmt.Sprintf("outcomes[%d].", i), req)
	}
	return outcomes, p.err()
}

// completion adds what breaks the rules to p, with the fields named after
// prefix, and is the outcome in the hub's form when nothing does.
func completion(p *fieldProblems, prefix string, req *pb.CompleteAttemptRequest) *pb.WorkerOutcome {
	before := len(*p)
	checkAttempt(p, req.GetRunId(), req.GetToken())
	for i := before; i < len(*p); i++ {
		(*p)[i].Field = prefix + (*p)[i].Field
	}
	state, ok := outcomeNames[req.GetOutcome()]
	if !ok {
		p.add(prefix+"outcome", "one of succeeded, failed, fenced, deadline_exceeded, cancelled")
	}
	if len(req.GetDetail()) > maxOutcomeDetail {
		p.add(prefix+"detail", fmt.Sprintf("at most %d bytes", maxOutcomeDetail))
	}
	if len(*p) > before {
		return nil
	}
	detail := req.GetDetail()
	if c := req.GetExitCode(); c != 0 {
		detail = strings.TrimPrefix(detail+"; exit code "+fmt.Sprint(c), "; ")
	}
	return &pb.WorkerOutcome{
		RunId: req.GetRunId(), Token: req.GetToken(), State: state, Detail: detail, Output: []byte(req.GetOutput()),
	}
}
