package main

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/ui"
)

// uiConnBuffer is the in-process connection's buffer.
const uiConnBuffer = 1 << 20

// mountUI serves the web UI on the HTTP port. Its run events are WatchRuns
// calls made through this node's own gRPC server, over an in-process
// connection, so every interceptor applies to them as to any client. Call
// it once every service is registered on gs; the connection is the
// caller's to close, and gs.Stop ends its listener.
func mountUI(o *ops.Server, gs *grpc.Server) (*grpc.ClientConn, error) {
	lis := bufconn.Listen(uiConnBuffer)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///raftcron-ui",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("web ui: %w", err)
	}
	h, err := ui.New(ui.Config{Identity: openAccess{}, Runs: pb.NewRunServiceClient(conn), Version: version})
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("web ui: %w", err)
	}
	o.Mount(ui.Prefix, h)
	return conn, nil
}

// openAccess is the UI's identity of every caller of a node without ACL
// tokens: anyone may do everything, so no sign-in is offered.
type openAccess struct{}

func (openAccess) WhoAmI(context.Context, string) (name, role string, err error) {
	return "anonymous", "management", nil
}
