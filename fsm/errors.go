package fsm

import (
	"errors"
	"fmt"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// One sentinel per result code, so that callers on any node can test a
// command's outcome with errors.Is whatever the message says.
var (
	ErrNotFound        = errors.New("job not found")
	ErrAlreadyExists   = errors.New("job already exists")
	ErrVersionMismatch = errors.New("job version mismatch")
	ErrMalformed       = errors.New("malformed command")
	ErrInvalid         = errors.New("invalid command")
	ErrLimitExceeded   = errors.New("limit exceeded")
	// ErrRunFinished: a cancel named a run that is no longer open.
	ErrRunFinished = errors.New("run is finished")
	// ErrInUse: a delete named something that others refer to (a
	// calendar jobs refer to).
	ErrInUse = errors.New("in use")
	// ErrDependency: a command breaks a rule between jobs (after): a
	// cycle, a chain deeper or wider than the command allows, the delete
	// of a job others depend on.
	ErrDependency = errors.New("dependency rule broken")
)

// codes pairs each sentinel with its result code; the order is the order in
// which CodeOf tries them.
var codes = []struct {
	code pb.ResultCode
	err  error
}{
	{pb.ResultCode_RESULT_CODE_NOT_FOUND, ErrNotFound},
	{pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, ErrAlreadyExists},
	{pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, ErrVersionMismatch},
	{pb.ResultCode_RESULT_CODE_MALFORMED, ErrMalformed},
	{pb.ResultCode_RESULT_CODE_INVALID, ErrInvalid},
	{pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED, ErrLimitExceeded},
	{pb.ResultCode_RESULT_CODE_RUN_FINISHED, ErrRunFinished},
	{pb.ResultCode_RESULT_CODE_IN_USE, ErrInUse},
	{pb.ResultCode_RESULT_CODE_DEPENDENCY, ErrDependency},
}

// resultError carries a human message while unwrapping to its sentinel, so
// the message a node reports is exactly the one the proposer sees.
type resultError struct {
	kind error
	msg  string
}

func (e *resultError) Error() string {
	if e.msg == "" {
		return e.kind.Error()
	}
	return e.msg
}

func (e *resultError) Unwrap() error { return e.kind }

func fail(kind error, format string, args ...any) error {
	return &resultError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func malformed(format string, args ...any) error {
	return fail(ErrMalformed, "malformed command: "+format, args...)
}

// CodeOf maps an error to the result code a CommandResult carries: nil is OK,
// a sentinel its code, and anything else INVALID.
func CodeOf(err error) pb.ResultCode {
	if err == nil {
		return pb.ResultCode_RESULT_CODE_OK
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return pb.ResultCode_RESULT_CODE_INVALID
}

// ResultError turns a non-OK result back into an error that unwraps to the
// sentinel of its code and reads as the result's message. An OK result gives
// nil.
func ResultError(r *pb.CommandResult) error {
	if r == nil {
		return fail(ErrMalformed, "no command result")
	}
	if r.GetCode() == pb.ResultCode_RESULT_CODE_OK {
		return nil
	}
	for _, c := range codes {
		if c.code == r.GetCode() {
			return &resultError{kind: c.err, msg: r.GetMessage()}
		}
	}
	return fmt.Errorf("unknown command result code %v: %s", r.GetCode(), r.GetMessage())
}
