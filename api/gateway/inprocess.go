package gateway

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// inProcessBuffer is the in-memory connection's buffer: a whole ApplyJob
// request fits, as it would in one TCP window.
const inProcessBuffer = 1 << 20

// InProcess makes gs serve an in-memory listener too, and returns a
// connection to it for New: the gateway's calls go through gs and every
// one of its interceptors, with no port and no network hop. Call it after
// every service is registered on gs; gs.Stop ends it.
//
// The connection has no transport security unless opts give some. A gRPC
// server that requires TLS needs matching credentials here, but never the
// node's own client certificate where certificates identify callers: HTTP
// callers would then act as the node. They identify themselves with their
// bearer token, which the gateway passes on.
func InProcess(gs *grpc.Server, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	lis := bufconn.Listen(inProcessBuffer)
	go func() { _ = gs.Serve(lis) }()
	dial := append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, opts...)
	return grpc.NewClient("passthrough:///raftcron-in-process", dial...)
}
