package cli

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
)

func TestTriggerErrorsThatMayHaveRun(t *testing.T) {
	t.Parallel()
	notLeader := cluster.NotLeaderStatus("no leader", "", "")
	cases := []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, "leadership changed while committing; the outcome is unknown"), true},
		{status.Error(codes.DeadlineExceeded, "deadline"), true},
		{notLeader, false},
		{status.Error(codes.FailedPrecondition, "paused"), false},
		{status.Error(codes.NotFound, "job not found"), false},
		{status.Error(codes.InvalidArgument, "name"), false},
	}
	for _, tc := range cases {
		if got := mayHaveRun(tc.err); got != tc.want {
			t.Errorf("mayHaveRun(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
