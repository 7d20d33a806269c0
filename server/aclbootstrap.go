package server

import (
	"context"
	"time"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/cluster"
)

// FieldACLBootstrapSecret names the ACLBootstrapSecret field in a
// *cluster.ConfigError.
const FieldACLBootstrapSecret = "ACLBootstrapSecret"

// The leader's attempts to bootstrap from the secret: at each election
// and every aclBootstrapInterval after, until the cluster is bootstrapped
// (a voter too old for the ACL commands refuses it meanwhile).
const (
	aclBootstrapInterval = 2 * time.Second
	aclBootstrapTimeout  = 5 * time.Second
)

func (cfg Config) checkACLBootstrap() error {
	switch {
	case cfg.ACLBootstrapSecret == "":
		return nil
	case !cfg.ACL:
		return &cluster.ConfigError{Field: FieldACLBootstrapSecret, Err: cluster.ErrInvalidConfig,
			Rule: "needs ACLs on: without them no token is checked"}
	}
	if err := api.CheckBootstrapSecret(cfg.ACLBootstrapSecret); err != nil {
		return &cluster.ConfigError{Field: FieldACLBootstrapSecret, Rule: err.Error(), Err: cluster.ErrInvalidConfig}
	}
	return nil
}

// bootstrapACLs runs while the server does, on a node given a bootstrap
// secret: whenever it leads a cluster whose ACLs are not bootstrapped, it
// bootstraps them with the secret. It stops once they are.
func (s *Server) bootstrapACLs(b *api.FileBootstrap) {
	tick := time.NewTicker(aclBootstrapInterval)
	defer tick.Stop()
	for !s.state.ACLBootstrapped() {
		if s.node.IsLeader() && s.tryBootstrapACLs(b) {
			s.log.Info("ACLs bootstrapped: the first management token's secret is the one in --acl-bootstrap-file")
			return
		}
		select {
		case <-s.stopc:
			return
		case <-s.leading:
		case <-tick.C:
		}
	}
}

// tryBootstrapACLs makes one attempt and reports whether the cluster is
// bootstrapped.
func (s *Server) tryBootstrapACLs(b *api.FileBootstrap) bool {
	ctx, cancel := context.WithTimeout(context.Background(), aclBootstrapTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.stopc:
			cancel()
		case <-ctx.Done():
		}
	}()
	done, err := b.Bootstrap(ctx)
	if err != nil {
		s.log.Info("bootstrapping ACLs from --acl-bootstrap-file failed; retrying", "err", err)
	}
	return done
}
