package cli

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/backoff"
)

// retryNotLeader retries a call refused with NOT_LEADER until the call's
// deadline. NOT_LEADER means nothing was proposed, so a retry can never apply
// a change twice; it lets a command issued during an election succeed once
// the new leader is up. Any other error is returned at once.
func retryNotLeader(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return backoff.Retry(ctx, 50*time.Millisecond, time.Second, isNotLeader, func() error {
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}

func isNotLeader(err error) bool {
	_, ok := cluster.NotLeaderInfo(err)
	return ok
}
