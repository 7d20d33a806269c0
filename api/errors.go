package api

import (
	"context"
	"errors"
	"regexp"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// statusOf maps an error from the Store, the Registry, the Cluster or a
// command's result (fsm.ResultError) to the gRPC status the client sees. It
// is the one place where that mapping lives. A refusal for want of a leader
// carries cluster's NOT_LEADER ErrorInfo, so that clients retry.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	var noLeader *cluster.NoLeaderError
	switch {
	case errors.As(err, &noLeader):
		return cluster.NotLeaderStatus(err.Error(), noLeader.LeaderID, noLeader.LeaderAddr)
	case errors.Is(err, cluster.ErrNoLeader):
		return cluster.NotLeaderStatus(err.Error(), "", "")
	case errors.Is(err, cluster.ErrIndeterminate):
		return status.Error(codes.Unavailable, "leadership changed while committing; the outcome is unknown "+
			"(the change may still be applied): read the current state before retrying: "+err.Error())
	case errors.Is(err, cluster.ErrNotLeader):
		// Nothing was proposed: as safe to retry as having no leader at all.
		return cluster.NotLeaderStatus(err.Error()+": retry", "", "")
	case errors.Is(err, cluster.ErrShutdown):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, cluster.ErrNotFound), errors.Is(err, fsm.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, cluster.ErrServerExists), errors.Is(err, fsm.ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, fsm.ErrVersionMismatch), errors.Is(err, cluster.ErrUnsupportedCommand),
		errors.Is(err, fsm.ErrRunFinished), errors.Is(err, fsm.ErrInUse), errors.Is(err, fsm.ErrDependency):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, fsm.ErrLimitExceeded):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, fsm.ErrInvalid):
		// Validation runs before proposing, so this is a rule only the
		// state can check; it is still about the caller's input.
		return stateRule(err.Error())
	case errors.Is(err, fsm.ErrMalformed):
		// The command this server built was broken: a bug here, not in
		// the request.
		return status.Error(codes.Internal, err.Error())
	case errors.Is(err, cluster.ErrHalted):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, cluster.ErrInvalidConfig):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, cluster.ErrRestoreRunning):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	// A status that came back from the leader through forwarding already
	// says what happened.
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s.Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// resultStatus maps a CommandResult that is not OK to a gRPC status.
func resultStatus(res *pb.CommandResult) error { return statusOf(fsm.ResultError(res)) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// fieldPath is how the FSM names the field a rule is about, at the start
// of its message: "calendars.only[0]: calendar \"x\" not found".
var fieldPath = regexp.MustCompile(`^([a-z_]+(\[[0-9]+\])?)(\.[a-z_]+(\[[0-9]+\])?)*: `)

// stateRule is InvalidArgument for a rule only the state could check,
// with a BadRequest detail when the message names its field.
func stateRule(msg string) error {
	loc := fieldPath.FindStringIndex(msg)
	if loc == nil {
		return status.Error(codes.InvalidArgument, msg)
	}
	return badRequest(msg, &errdetails.BadRequest_FieldViolation{Field: msg[:loc[1]-2], Description: msg[loc[1]:]})
}

// invalidArgument turns a validation error into InvalidArgument with a
// BadRequest detail listing each violated field. field names the request
// field for errors that do not carry their own.
func invalidArgument(err error, field string) error {
	var violations []*errdetails.BadRequest_FieldViolation
	var ve *jobspec.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			violations = append(violations, &errdetails.BadRequest_FieldViolation{
				Field:       orDefault(v.Field, field),
				Description: v.Rule,
			})
		}
	}
	if len(violations) == 0 {
		violations = []*errdetails.BadRequest_FieldViolation{{Field: field, Description: err.Error()}}
	}
	return badRequest(err.Error(), violations...)
}

// fieldError is InvalidArgument for one field and one rule.
func fieldError(field, rule string) error {
	return badRequest(field+": "+rule, &errdetails.BadRequest_FieldViolation{Field: field, Description: rule})
}

func badRequest(msg string, violations ...*errdetails.BadRequest_FieldViolation) error {
	st, err := status.New(codes.InvalidArgument, msg).WithDetails(&errdetails.BadRequest{FieldViolations: violations})
	if err != nil {
		return status.Error(codes.InvalidArgument, msg)
	}
	return st.Err()
}
