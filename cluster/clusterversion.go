package cluster

import (
	"context"
	"errors"
	"time"
)

// The active cluster version (DESIGN §16) is the command version whose
// rules the FSM applies to kinds that already existed; it lives in the
// replicated state and the cluster only raises it. The leader proposes the
// raise (Config.RaiseClusterVersion) to its own CommandVersion right after
// it wins an election and then every raiseInterval while the version is
// below it. The proposal goes through the version check like any command
// (admit): it commits only once every voter applies the version, so during
// a rolling upgrade it is refused until the last voter runs the new
// release, and a fresh cluster of one release raises it at its first
// election. Only the leader proposes it: it is never forwarded.
const (
	raiseInterval = 2 * time.Second
	// raiseTimeout bounds one attempt: the voters' answers and the commit.
	raiseTimeout = 5 * time.Second
)

// raiseVersion runs until stop is closed, raising the cluster version
// whenever this node leads below its own command version.
func (n *Node) raiseVersion(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(raiseInterval)
	defer tick.Stop()
	var refused string // the last refusal logged, so each is logged once
	for {
		select {
		case <-stop:
			return
		case <-n.raiseNow:
		case <-tick.C:
		}
		refused = n.tryRaise(stop, refused)
	}
}

// tryRaise proposes the raise once if this node leads below its version
// and returns the refusal it logged, if any.
func (n *Node) tryRaise(stop <-chan struct{}, refused string) string {
	from, to := n.cfg.ClusterVersion(), n.cfg.CommandVersion
	if !n.IsLeader() || from >= to {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), raiseTimeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd := n.cfg.RaiseClusterVersion(to)
	n.stamp(cmd)
	_, err := n.ApplyLocal(ctx, cmd)
	switch {
	case err == nil:
		n.log.Info("cluster version raised: every voter applies it", "from", from, "to", n.cfg.ClusterVersion())
		return ""
	case errors.Is(err, ErrUnsupportedCommand):
		if msg := err.Error(); msg != refused {
			n.log.Info("cluster version stays until every voter runs this release", "version", from, "wanted", to, "why", msg)
			return msg
		}
		return refused
	default:
		n.log.Debug("raising the cluster version failed; retrying", "err", err)
		return refused
	}
}

// clusterVersion is the FSM's active cluster version, 0 if the node was
// not told how to read it.
func (n *Node) clusterVersion() uint32 {
	if n.cfg.ClusterVersion == nil {
		return 0
	}
	return n.cfg.ClusterVersion()
}
