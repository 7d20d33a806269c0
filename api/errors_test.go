package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestStatusOf(t *testing.T) {
	cases := map[string]struct {
		err      error
		code     codes.Code
		contains string
	}{
		"no leader error":     {&cluster.NoLeaderError{LeaderID: "n1", LeaderAddr: "a:1"}, codes.Unavailable, "no leader"},
		"bare no leader":      {fmt.Errorf("apply: %w", cluster.ErrNoLeader), codes.Unavailable, "no leader"},
		"not leader":          {cluster.ErrNotLeader, codes.Unavailable, "not the leader"},
		"indeterminate":       {fmt.Errorf("apply: %w", cluster.ErrIndeterminate), codes.Unavailable, "outcome is unknown"},
		"shut down":           {cluster.ErrShutdown, codes.Unavailable, "shut down"},
		"server not found":    {cluster.ErrNotFound, codes.NotFound, "server not found"},
		"server exists":       {cluster.ErrServerExists, codes.AlreadyExists, "already"},
		"job not found":       {fsm.ErrNotFound, codes.NotFound, "job not found"},
		"deadline":            {fmt.Errorf("waiting: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "deadline"},
		"canceled":            {context.Canceled, codes.Canceled, "canceled"},
		"forwarded status":    {status.Error(codes.ResourceExhausted, "slow down"), codes.ResourceExhausted, "slow down"},
		"anything else":       {errBoom, codes.Internal, "boom"},
		"unknown grpc status": {status.Error(codes.Unknown, "odd"), codes.Internal, "odd"},
		"invalid config":      {fmt.Errorf("%w: bad id", cluster.ErrInvalidConfig), codes.InvalidArgument, "bad id"},
		"unsupported command": {fmt.Errorf("apply: %w", cluster.ErrUnsupportedCommand), codes.FailedPrecondition, "version"},
		"halted":              {fmt.Errorf("apply: %w", cluster.ErrHalted), codes.Unavailable, "cannot apply"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := status.Convert(statusOf(tc.err))
			if st.Code() != tc.code || !strings.Contains(st.Message(), tc.contains) {
				t.Errorf("statusOf(%v) = %v %q, want %v containing %q", tc.err, st.Code(), st.Message(), tc.code, tc.contains)
			}
		})
	}
	if statusOf(nil) != nil {
		t.Error("statusOf(nil) is not nil")
	}
}

func TestStatusOfNoLeaderCarriesLeader(t *testing.T) {
	err := statusOf(fmt.Errorf("wrapped: %w", &cluster.NoLeaderError{LeaderID: "n3", LeaderAddr: "10.0.0.3:7001"}))
	assertNotLeader(t, err, "n3", "10.0.0.3:7001")
	assertNotLeader(t, statusOf(cluster.ErrNoLeader), "", "")
}

func TestResultStatus(t *testing.T) {
	cases := map[pb.ResultCode]codes.Code{
		pb.ResultCode_RESULT_CODE_NOT_FOUND:        codes.NotFound,
		pb.ResultCode_RESULT_CODE_ALREADY_EXISTS:   codes.AlreadyExists,
		pb.ResultCode_RESULT_CODE_VERSION_MISMATCH: codes.FailedPrecondition,
		pb.ResultCode_RESULT_CODE_INVALID:          codes.InvalidArgument,
		pb.ResultCode_RESULT_CODE_MALFORMED:        codes.Internal,
		pb.ResultCode_RESULT_CODE_UNSPECIFIED:      codes.Internal,
		pb.ResultCode(99):                          codes.Internal,
	}
	for rc, want := range cases {
		st := status.Convert(resultStatus(&pb.CommandResult{Code: rc, Message: "detail"}))
		if st.Code() != want || !strings.Contains(st.Message(), "detail") {
			t.Errorf("result %v: got %v %q, want %v with the result's message", rc, st.Code(), st.Message(), want)
		}
	}
}

// A store that answers with no result at all is a bug there, reported as
// Internal rather than a nil job.
func TestNilResultIsInternal(t *testing.T) {
	svc := NewJobService(Deps{Store: nilResultStore{}, Registry: newFakeStore()})
	_, err := svc.DeleteJob(context.Background(), &pb.DeleteJobRequest{Name: "a"})
	wantCode(t, err, codes.Internal)
}

type nilResultStore struct{}

func (nilResultStore) Apply(context.Context, *pb.Command) (*pb.CommandResult, error) { return nil, nil }
func (nilResultStore) ReadBarrier(context.Context) error                             { return nil }
