package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Triggerer commits a manual run of a job in the leader's next fire batch
// and dispatches it if the FSM accepts it. Only the leader's scheduler can
// (G2: a node dispatches only attempts it committed itself while leader).
// A refusal is a FireResult with accepted=false and its reason, not an
// error; errors are for runs that could not be proposed or committed.
// run is the manual fire: its job, request id, force, principal (who
// asked, for the audit record of the run), payload and overlap; the leader
// fills in its generation and kind.
type Triggerer interface {
	Trigger(ctx context.Context, run *pb.Fire) (*pb.FireResult, error)
}

// MaxPayload bounds a trigger's payload: it travels in the Raft log and
// stays in the run.
const MaxPayload = 64 << 10

// Leadership is what a follower needs to hand a call to the leader. The
// connection belongs to the callee: it is never closed here.
type Leadership interface {
	IsLeader() bool
	LeaderConn() (*grpc.ClientConn, error)
}

// ForwardedKey marks a call that a follower forwarded to the leader. A
// forwarded call is never forwarded again, so leadership moving in between
// costs an error the client retries, not a loop.
const ForwardedKey = "raftcron-forwarded"

// Reasons of the FailedPrecondition details of a refused trigger.
const (
	PreconditionPaused  = "PAUSED"
	PreconditionOverlap = "OVERLAP"
	PreconditionRefused = "REFUSED"
)

// requestIDPattern keeps caller-chosen ids (UUIDs, ULIDs, "deploy-42")
// short and printable: they are stored in the log and shown in runs.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)

// TriggerJob commits a manual run now. On a follower the whole call goes to
// the leader, once. An empty request_id gets a random one first, so that a
// forwarded retry of this call stays idempotent.
func (j *jobService) TriggerJob(ctx context.Context, req *pb.TriggerJobRequest) (*pb.TriggerJobResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, err
	}
	req = proto.CloneOf(req)
	if req.GetRequestId() == "" {
		req.RequestId = newRequestID()
	} else if !requestIDPattern.MatchString(req.GetRequestId()) {
		return nil, fieldError("request_id", "must be 1-128 characters of A-Z a-z 0-9 . _ : / -")
	}
	fire, err := j.manualFire(ctx, req)
	if err != nil {
		return nil, err
	}
	forwarded := isForwarded(ctx)
	if j.leadership != nil && !j.leadership.IsLeader() {
		return j.forwardTrigger(ctx, req, forwarded)
	}
	if j.trigger == nil {
		return nil, status.Error(codes.Unimplemented, "TriggerJob: this node runs no scheduler")
	}
	if err := j.barrier(ctx, false); err != nil {
		return nil, err
	}
	if _, err := visibleJob(ctx, j.reg, req.GetName()); err != nil {
		return nil, err
	}
	j.audit.ensure(ctx)
	fire.Principal = PrincipalFrom(ctx).Name
	res, err := j.trigger.Trigger(ctx, fire)
	if err != nil {
		if errors.Is(err, cluster.ErrNotLeader) {
			// Nothing was committed, or the request id finds the run that was.
			return j.forwardTrigger(ctx, req, forwarded)
		}
		return nil, statusOf(err)
	}
	run, err := triggered(req.GetName(), res)
	if err != nil {
		return nil, err
	}
	return &pb.TriggerJobResponse{Run: run}, nil
}

// manualFire is the fire of a trigger request: its payload (at most
// MaxPayload) and overlap policy checked, and refused before the cluster
// runs fsm.SchedulesVersion.
func (j *jobService) manualFire(ctx context.Context, req *pb.TriggerJobRequest) (*pb.Fire, error) {
	if n := len(req.GetPayload()); n > MaxPayload {
		return nil, fieldError("payload", fmt.Sprintf("%d bytes exceed the limit of %d bytes", n, MaxPayload))
	}
	overlap, err := overlapWord("overlap", req.GetOverlap(), pb.Overlap_OVERLAP_SKIP, pb.Overlap_OVERLAP_ALLOW,
		pb.Overlap_OVERLAP_BUFFER_ONE, pb.Overlap_OVERLAP_CANCEL_OTHER)
	if err != nil {
		return nil, err
	}
	if req.GetPayload() != "" || overlap != pb.Overlap_OVERLAP_UNSPECIFIED {
		if err := j.needVersion(ctx, req.GetName(), "a trigger's payload or overlap", fsm.SchedulesVersion); err != nil {
			return nil, err
		}
	}
	return &pb.Fire{Job: req.GetName(), RequestId: req.GetRequestId(), Force: req.GetForce(),
		Payload: req.GetPayload(), Overlap: overlap}, nil
}

// forwardTrigger hands the call to the leader, unless it was forwarded
// here already.
func (j *jobService) forwardTrigger(ctx context.Context, req *pb.TriggerJobRequest, forwarded bool) (*pb.TriggerJobResponse, error) {
	return onLeader(ctx, j, forwarded, func(c pb.JobServiceClient, ctx context.Context) (*pb.TriggerJobResponse, error) {
		return c.TriggerJob(ctx, req)
	})
}

// onLeader makes call on the leader's JobService, unless this call was
// forwarded here already (NOT_LEADER then: a call is forwarded once).
func onLeader[Resp any](ctx context.Context, j *jobService, forwarded bool,
	call func(pb.JobServiceClient, context.Context) (Resp, error)) (Resp, error) {
	var none Resp
	c, ctx, err := j.leaderClient(ctx, forwarded)
	if err != nil {
		return none, err
	}
	resp, err := call(c, ctx)
	if err != nil {
		return none, statusOf(err)
	}
	return resp, nil
}

// leaderClient is the JobService of the leader and the context marking a
// call to it as forwarded. A call that was forwarded already is answered
// NOT_LEADER instead: a call is forwarded at most once.
func (j *jobService) leaderClient(ctx context.Context, forwarded bool) (pb.JobServiceClient, context.Context, error) {
	if forwarded || j.leadership == nil {
		return nil, ctx, cluster.NotLeaderStatus("this node does not lead (any more): retry", "", "")
	}
	conn, err := j.leadership.LeaderConn()
	if err != nil {
		return nil, ctx, statusOf(err)
	}
	return pb.NewJobServiceClient(conn), forwardIdentity(ctx), nil
}

func isForwarded(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(ForwardedKey)) > 0
}

// triggered turns the FSM's answer into the run, or the error the caller
// sees. A duplicate request id is an answer, not an error: it is the run of
// the first call.
func triggered(name string, res *pb.FireResult) (*pb.Run, error) {
	switch {
	case res.GetAccepted(), res.GetReason() == fsm.ReasonDuplicateRequest:
		if res.GetRun() == nil {
			return nil, status.Errorf(codes.Internal, "trigger of job %q: the result carries no run", name)
		}
		return res.GetRun(), nil
	case res.GetReason() == fsm.ReasonGone:
		return nil, status.Errorf(codes.NotFound, "job %q not found", name)
	case res.GetReason() == fsm.ReasonPaused:
		return nil, precondition(PreconditionPaused, name,
			fmt.Sprintf("job %q is paused: set force to run it anyway", name))
	case res.GetReason() == fsm.ReasonOverlapSkipped:
		return nil, precondition(PreconditionOverlap, name,
			fmt.Sprintf("job %q has a run still open and its overlap policy refuses another (%s)", name, res.GetReason()))
	case res.GetReason() == fsm.ReasonOpenRunsLimit:
		return nil, status.Errorf(codes.ResourceExhausted,
			"job %q has as many runs open as the cluster allows one job (its limit of open runs); nothing ran: retry once one has finished", name)
	case res.GetReason() == fsm.ReasonCheckinJob:
		return nil, precondition(PreconditionRefused, name, fmt.Sprintf(
			"job %q is a check-in job: it runs elsewhere and checks in (raftcron checkin %s); raftcron runs nothing for it", name, name))
	case res.GetReason() == fsm.ReasonGeneration:
		return nil, status.Errorf(codes.Aborted, "job %q changed while the trigger committed; nothing ran: retry", name)
	case res.GetReason() == fsm.ReasonStaleTerm:
		return nil, cluster.NotLeaderStatus("leadership changed while the trigger committed; nothing ran: retry", "", "")
	default:
		return nil, precondition(PreconditionRefused, name,
			fmt.Sprintf("trigger of job %q refused: %s", name, res.GetReason()))
	}
}

// precondition is FailedPrecondition with a PreconditionFailure detail, so
// that clients can tell a refused trigger from a stale version.
func precondition(kind, job, msg string) error {
	return preconditionOn(kind, "jobs/"+job, msg)
}

// preconditionOn is FailedPrecondition about subject ("jobs/NAME",
// "tokens/NAME").
func preconditionOn(kind, subject, msg string) error {
	st, err := status.New(codes.FailedPrecondition, msg).WithDetails(&errdetails.PreconditionFailure{
		Violations: []*errdetails.PreconditionFailure_Violation{{Type: kind, Subject: subject, Description: msg}},
	})
	if err != nil {
		return status.Error(codes.FailedPrecondition, msg)
	}
	return st.Err()
}

// newRequestID is 16 random bytes in hex.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
