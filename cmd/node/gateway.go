package main

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/api/gateway"
	"github.com/raftcron/raftcron/ops"
)

// mountGateway serves the JSON API on the HTTP port, calling this node's
// own gRPC server in process so that every interceptor applies. Call it
// once every service is registered on gs. The connection is the caller's
// to close.
func mountGateway(o *ops.Server, gs *grpc.Server) (*grpc.ClientConn, error) {
	conn, err := gateway.InProcess(gs)
	if err != nil {
		return nil, fmt.Errorf("json api: %w", err)
	}
	h, err := gateway.New(context.Background(), conn, version)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("json api: %w", err)
	}
	o.Mount(gateway.Prefix, h)
	return conn, nil
}
