package server

import (
	"fmt"

	"github.com/raftcron/raftcron/api"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/ui"
)

// mountUI serves the web UI on the HTTP port. Its run events are WatchRuns
// calls through the JSON API's in-process port of the gRPC server, so the
// ACL interceptor and the token's selector apply as to any watcher; who a
// token is, the authorizer says. Call it after mountGateway.
func (s *Server) mountUI(auth *api.Authorizer) error {
	h, err := ui.New(ui.Config{Identity: auth, Runs: pb.NewRunServiceClient(s.gw.Conn()), Version: s.cfg.Version})
	if err != nil {
		return fmt.Errorf("web ui: %w", err)
	}
	s.ops.Mount(ui.Prefix, h)
	return nil
}
