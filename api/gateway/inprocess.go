package gateway

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/raftcron/raftcron/proto/codec"
)

// inProcessBuffer is the in-memory connection's buffer: a whole ApplyJob
// request fits, as it would in one TCP window.
const inProcessBuffer = 1 << 20

// InProcess is an in-memory port of the node's own gRPC server and a
// connection to it for New: the gateway's calls go through that server and
// every one of its interceptors, with no port and no network hop.
//
// The connection has no transport security unless the dial options give
// some. A gRPC server that requires TLS needs matching credentials here,
// but never the node's own client certificate where certificates identify
// callers: HTTP callers would then act as the node. They identify
// themselves with their bearer token, which the gateway passes on.
type InProcess struct {
	lis  *bufconn.Listener
	conn *grpc.ClientConn
}

// NewInProcess makes the port and the connection; nothing is served until
// the gRPC server serves Listener.
func NewInProcess(opts ...grpc.DialOption) (*InProcess, error) {
	lis := bufconn.Listen(inProcessBuffer)
	dial := append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec.Client)),
	}, opts...)
	conn, err := grpc.NewClient("passthrough:///raftcron-in-process", dial...)
	if err != nil {
		_ = lis.Close()
		return nil, err
	}
	return &InProcess{lis: lis, conn: conn}, nil
}

// Listener is the port the node's gRPC server must serve (grpc.Server.Serve)
// besides its own.
func (p *InProcess) Listener() net.Listener { return p.lis }

// Conn is the connection for New.
func (p *InProcess) Conn() *grpc.ClientConn { return p.conn }

// Close closes the connection and the port. Close it after the gRPC
// server's drain, so that HTTP calls in flight finish first.
func (p *InProcess) Close() error {
	err := p.conn.Close()
	_ = p.lis.Close()
	return err
}
