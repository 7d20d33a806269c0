package cli

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
)

func notLeaderErr(t *testing.T) error {
	t.Helper()
	return cluster.NotLeaderStatus("no leader", "", "")
}

func countingInvoker(errs ...error) (grpc.UnaryInvoker, *int) {
	calls := 0
	return func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func TestRetryNotLeaderRetriesUntilALeaderAnswers(t *testing.T) {
	t.Parallel()
	nl := notLeaderErr(t)
	inv, calls := countingInvoker(nl, nl)
	if err := retryNotLeader(context.Background(), "/m", nil, nil, nil, inv); err != nil {
		t.Fatalf("err = %v, want success after two NOT_LEADER", err)
	}
	if *calls != 3 {
		t.Fatalf("calls = %d, want 3", *calls)
	}
}

func TestRetryNotLeaderReturnsOtherErrorsAtOnce(t *testing.T) {
	t.Parallel()
	for _, e := range []error{
		status.Error(codes.Unavailable, "leadership changed while committing; the outcome is unknown"),
		status.Error(codes.InvalidArgument, "bad"),
		errors.New("plain"),
	} {
		inv, calls := countingInvoker(e)
		if err := retryNotLeader(context.Background(), "/m", nil, nil, nil, inv); err != e {
			t.Fatalf("err = %v, want %v", err, e)
		}
		if *calls != 1 {
			t.Fatalf("%v: calls = %d, want 1 (never retry what may have been applied)", e, *calls)
		}
	}
}

func TestRetryNotLeaderStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	nl := notLeaderErr(t)
	always := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nl }
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := retryNotLeader(ctx, "/m", nil, nil, nil, always); !isNotLeader(err) {
		t.Fatalf("err = %v, want the last NOT_LEADER", err)
	}
	if ctx.Err() == nil {
		t.Fatal("returned before the deadline")
	}
}
