package fsm_test

import (
	"errors"
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestResultErrorMapsCodesToSentinels(t *testing.T) {
	cases := []struct {
		code pb.ResultCode
		want error
	}{
		{pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound},
		{pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, fsm.ErrAlreadyExists},
		{pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, fsm.ErrVersionMismatch},
		{pb.ResultCode_RESULT_CODE_MALFORMED, fsm.ErrMalformed},
		{pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid},
		{pb.ResultCode_RESULT_CODE_RUN_FINISHED, fsm.ErrRunFinished},
	}
	for _, tc := range cases {
		err := fsm.ResultError(&pb.CommandResult{Code: tc.code, Message: "the message"})
		if !errors.Is(err, tc.want) || err.Error() != "the message" {
			t.Fatalf("ResultError(%v) = %v, want %v reading \"the message\"", tc.code, err, tc.want)
		}
		if got := fsm.CodeOf(err); got != tc.code {
			t.Fatalf("CodeOf(ResultError(%v)) = %v", tc.code, got)
		}
		for _, other := range cases {
			if other.code != tc.code && errors.Is(err, other.want) {
				t.Fatalf("ResultError(%v) also matches %v", tc.code, other.want)
			}
		}
	}
	if err := fsm.ResultError(&pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK}); err != nil {
		t.Fatalf("ResultError(OK) = %v, want nil", err)
	}
	if err := fsm.ResultError(nil); !errors.Is(err, fsm.ErrMalformed) {
		t.Fatalf("ResultError(nil) = %v, want ErrMalformed", err)
	}
	if err := fsm.ResultError(&pb.CommandResult{}); err == nil || fsm.CodeOf(err) != pb.ResultCode_RESULT_CODE_INVALID {
		t.Fatalf("ResultError(UNSPECIFIED) = %v, want an error outside the sentinels", err)
	}
	if fsm.CodeOf(nil) != pb.ResultCode_RESULT_CODE_OK {
		t.Fatal("CodeOf(nil) is not OK")
	}
}

func TestJobOfMissingNameIsNotFound(t *testing.T) {
	_, err := fsm.New().Job("ghost")
	if !errors.Is(err, fsm.ErrNotFound) || fsm.CodeOf(err) != pb.ResultCode_RESULT_CODE_NOT_FOUND {
		t.Fatalf("Job(ghost) = %v, want ErrNotFound", err)
	}
}
