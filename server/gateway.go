package server

import (
	"context"
	"fmt"

	"github.com/raftcron/raftcron/api/gateway"
)

// mountGateway serves the JSON API on the HTTP port, calling this node's
// own gRPC server in process so that every interceptor applies, ACLs
// included. Call it once every service is registered; Start serves the
// in-process port, Stop closes it after the gRPC drain.
func (s *Server) mountGateway() error {
	in, err := gateway.NewInProcess()
	if err != nil {
		return fmt.Errorf("json api: %w", err)
	}
	h, err := gateway.New(context.Background(), in.Conn(), s.cfg.Version)
	if err != nil {
		_ = in.Close()
		return fmt.Errorf("json api: %w", err)
	}
	s.ops.Mount(gateway.Prefix, h)
	s.gw = in
	s.undo.push(func(context.Context) { _ = in.Close() })
	return nil
}
