package api

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/checkin"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxCheckinOutput is how much of a ping's output a check-in run keeps:
// the last 4 KiB, as an exec run keeps the first.
const MaxCheckinOutput = 4096

// checkinMatches bounds how often a ping is matched again after the job
// moved on under it (a miss, another ping): each try sees the state the
// one before left.
const checkinMatches = 3

var checkinStatuses = map[string]pb.CheckinStatus{
	"":        pb.CheckinStatus_CHECKIN_STATUS_SUCCESS,
	"start":   pb.CheckinStatus_CHECKIN_STATUS_START,
	"success": pb.CheckinStatus_CHECKIN_STATUS_SUCCESS,
	"fail":    pb.CheckinStatus_CHECKIN_STATUS_FAIL,
}

// CheckinJob records a ping of a check-in job. On a follower the whole
// call goes to the leader, once: the leader matches the ping to a slot at
// its own clock, the clock that stamps the command the FSM decides by. An
// empty request_id gets a random one first, so that a forwarded retry of
// this call counts once.
func (j *jobService) CheckinJob(ctx context.Context, req *pb.CheckinJobRequest) (*pb.CheckinJobResponse, error) {
	ping, err := checkinCommand(req)
	if err != nil {
		return nil, err
	}
	req = proto.CloneOf(req)
	req.RequestId = ping.GetRequestId()
	if j.leadership != nil && !j.leadership.IsLeader() {
		return j.forwardCheckin(ctx, req, isForwarded(ctx))
	}
	if err := j.barrier(ctx, false); err != nil {
		return nil, err
	}
	ping.MaxOpenRuns = j.limits.MaxOpenRuns
	for try := 1; ; try++ {
		if err := j.match(ctx, ping); err != nil {
			return nil, err
		}
		cmd := &pb.Command{Caller: PrincipalFrom(ctx).caller(), Kind: &pb.Command_Checkin{Checkin: ping}}
		res, err := j.store.Apply(ctx, cmd)
		if errors.Is(err, cluster.ErrNotLeader) {
			return j.forwardCheckin(ctx, req, isForwarded(ctx)) // nothing was proposed
		}
		if err == nil {
			err = fsm.ResultError(res)
		}
		switch {
		case err == nil:
			return &pb.CheckinJobResponse{Run: res.GetRun()}, nil
		case !errors.Is(err, fsm.ErrVersionMismatch):
			return nil, statusOf(err)
		case try == checkinMatches:
			return nil, status.Errorf(codes.Aborted, "check-in of job %q: the job kept moving on while the ping was matched "+
				"to its schedule; nothing was recorded: retry", req.GetName())
		}
	}
}

// checkinCommand is the request's ping before it is matched, or the
// InvalidArgument naming the field at fault.
func checkinCommand(req *pb.CheckinJobRequest) (*pb.CheckinCommand, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, err
	}
	st, ok := checkinStatuses[req.GetStatus()]
	if !ok {
		return nil, fieldError("status", "must be start, success or fail")
	}
	start := st == pb.CheckinStatus_CHECKIN_STATUS_START
	switch {
	case start && req.ExitCode != nil:
		return nil, fieldError("exit_code", "is for success and fail")
	case st == pb.CheckinStatus_CHECKIN_STATUS_SUCCESS && req.GetExitCode() != 0:
		return nil, fieldError("exit_code", "a success exits 0: report a non-zero exit code with fail")
	case start && req.GetOutput() != "":
		return nil, fieldError("output", "is for success and fail")
	case start && req.GetRunId() != "":
		return nil, fieldError("run_id", "is for success and fail: a start opens a run")
	case len(req.GetRunId()) > 256 || !utf8.ValidString(req.GetRunId()):
		return nil, fieldError("run_id", "must be a run id")
	}
	rid := req.GetRequestId()
	if rid == "" {
		rid = newRequestID()
	} else if !requestIDPattern.MatchString(rid) {
		return nil, fieldError("request_id", "must be 1-128 characters of A-Z a-z 0-9 . _ : / -")
	}
	return &pb.CheckinCommand{
		Job: req.GetName(), Status: st, ExitCode: req.ExitCode, Output: outputTail(req.GetOutput()),
		RunId: req.GetRunId(), RequestId: rid,
	}, nil
}

// outputTail is the last MaxCheckinOutput bytes of out, from a rune
// boundary on.
func outputTail(out string) []byte {
	if len(out) <= MaxCheckinOutput {
		return []byte(out)
	}
	i := len(out) - MaxCheckinOutput
	for i < len(out) && !utf8.RuneStart(out[i]) {
		i++
	}
	return []byte(out[i:])
}

// match fills in which slot of its job's schedule the ping belongs to, at
// this node's clock, from the job as this node applied it.
func (j *jobService) match(ctx context.Context, ping *pb.CheckinCommand) error {
	job, err := visibleJob(ctx, j.reg, ping.GetJob())
	if err != nil {
		return err
	}
	spec := job.GetSpec()
	if spec.GetCheckin() == nil {
		return precondition(PreconditionRefused, ping.GetJob(), fmt.Sprintf(
			"job %q is not a check-in job: raftcron runs it itself (job trigger runs it now)", ping.GetJob()))
	}
	sched, err := jobspec.ScheduleOf(spec)
	if err != nil {
		sched = nil // a stored schedule that no longer parses has no slots: the ping is off schedule
	}
	cursor := job.GetStatus().GetCursorUnix()
	m := checkin.Find(checkin.JobOf(spec, cursor, sched), j.now())
	ping.Generation, ping.CursorUnix, ping.SlotUnix = job.GetGeneration(), cursor, m.Slot
	ping.MissedFromUnix, ping.MissedToUnix, ping.MissedCount = m.Missed.From, m.Missed.To, m.Missed.Count
	return nil
}

// forwardCheckin hands the call to the leader, unless it was forwarded
// here already.
func (j *jobService) forwardCheckin(ctx context.Context, req *pb.CheckinJobRequest, forwarded bool) (*pb.CheckinJobResponse, error) {
	return onLeader(ctx, j, forwarded, func(c pb.JobServiceClient, ctx context.Context) (*pb.CheckinJobResponse, error) {
		return c.CheckinJob(ctx, req)
	})
}
