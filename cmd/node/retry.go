package main

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/cluster"
)

// retryNotLeader retries a call refused with NOT_LEADER until the call's
// deadline. NOT_LEADER means nothing was proposed, so a retry can never apply
// a change twice; it lets a command issued during an election succeed once
// the new leader is up. Any other error is returned at once.
func retryNotLeader(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	backoff := 50 * time.Millisecond
	for {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil || !isNotLeader(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err // the last NOT_LEADER says more than "deadline exceeded"
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

func isNotLeader(err error) bool {
	_, ok := cluster.NotLeaderInfo(err)
	return ok
}
