package harness

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestLoadRunsExactlyCountOpsAndCountsErrors(t *testing.T) {
	conns, err := Dial("127.0.0.1:1", 4) // never dialled: the op ignores the client
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(conns)
	var calls atomic.Int64
	res, err := Load{Conns: conns, Count: 100}.Run(context.Background(), func(_ context.Context, _ pb.JobServiceClient, i int) error {
		calls.Add(1)
		if i%10 == 0 {
			return errors.New("boom")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 100 || res.Ops != 90 || res.Errors != 10 || res.FirstError != "boom" || res.Clients != 4 {
		t.Errorf("calls %d result %+v", calls.Load(), res)
	}
	if res.Latency.N != 90 {
		t.Errorf("latency samples %d, want 90", res.Latency.N)
	}
}

func TestLoadStopsAfterDuration(t *testing.T) {
	conns, err := Dial("127.0.0.1:1", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(conns)
	start := time.Now()
	res, err := Load{Conns: conns, Duration: 200 * time.Millisecond}.Run(context.Background(), func(ctx context.Context, _ pb.JobServiceClient, _ int) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("ran %s", el)
	}
	if res.Ops == 0 || res.Errors != 0 {
		t.Errorf("result %+v: ops cut by the end of the load are not errors", res)
	}
	if _, err := (Load{Conns: conns}).Run(context.Background(), nil); err == nil {
		t.Error("a load with neither Count nor Duration ran")
	}
}

func TestRetryRetriesOnlyUnavailable(t *testing.T) {
	n := 0
	err := Retry(context.Background(), 5, func() error {
		n++
		if n < 3 {
			return status.Error(codes.Unavailable, "no leader")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("err %v after %d calls, want success after 3", err, n)
	}
	n = 0
	err = Retry(context.Background(), 5, func() error {
		n++
		return status.Error(codes.InvalidArgument, "bad")
	})
	if status.Code(err) != codes.InvalidArgument || n != 1 {
		t.Errorf("err %v after %d calls, want InvalidArgument at once", err, n)
	}
}
