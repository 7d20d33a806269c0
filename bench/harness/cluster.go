// Package harness runs the benchmark scenarios' moving parts: a cluster of
// real `raftcron serve` processes on loopback (localcluster, with the
// waits and readings the scenarios time), a webhook sink that records what
// the cluster delivers, gRPC load generators, and readers for /proc,
// /metrics and the Raft log. Every node process is registered by
// localcluster, so one call (localcluster.KillAll) ends them all, whatever
// went wrong.
package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/raftcron/raftcron/localcluster"
)

// Bounds of the cluster's waits; generous for a loaded 2-core box.
const (
	ReadyTimeout = 60 * time.Second
	exitTimeout  = 20 * time.Second
	pollEvery    = 20 * time.Millisecond
)

// ErrTimeout is returned by every bounded wait that ran out.
var ErrTimeout = errors.New("timed out")

// ClusterOptions describes a cluster to start.
type ClusterOptions struct {
	// Bin is the raftcron binary.
	Bin string
	// Dir holds the nodes' data dirs and logs; it must exist.
	Dir string
	// Nodes is the cluster size; 0 means 3.
	Nodes int
	// Extra are added to every node's serve flags (e.g. --raft-heartbeat 500ms).
	Extra []string
	// LogLevel of the nodes; empty means info.
	LogLevel string
}

// StartCluster starts the nodes, each with a pprof port (Node.DebugAddr),
// and waits until every one is ready. On error every node started so far
// is killed.
func StartCluster(ctx context.Context, o ClusterOptions) (*localcluster.Cluster, error) {
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	return localcluster.Start(ctx, localcluster.Options{Binary: o.Bin, Dir: o.Dir, Nodes: o.Nodes, Debug: true,
		Args: append([]string{"--log-level", o.LogLevel}, o.Extra...)})
}

// Leader waits up to timeout until a running node reports itself leader.
func Leader(ctx context.Context, c *localcluster.Cluster, timeout time.Duration) (*localcluster.Node, error) {
	var found *localcluster.Node
	err := Poll(ctx, timeout, "a leader", func() (bool, error) {
		found = c.CurrentLeader(ctx)
		return found != nil, nil
	})
	return found, err
}

// WaitCaughtUp waits until every running node has applied up to index.
func WaitCaughtUp(ctx context.Context, c *localcluster.Cluster, index uint64, timeout time.Duration) error {
	return WaitCaughtUpEvery(ctx, c, index, timeout, pollEvery)
}

// WaitCaughtUpEvery is WaitCaughtUp asking the nodes every every.
func WaitCaughtUpEvery(ctx context.Context, c *localcluster.Cluster, index uint64, timeout, every time.Duration) error {
	return PollEvery(ctx, timeout, every, fmt.Sprintf("every node applied index %d", index), func() (bool, error) {
		for _, n := range c.Nodes() {
			if !n.Running() {
				continue
			}
			st, err := n.Status(ctx)
			if err != nil || st.AppliedIndex < index {
				return false, nil
			}
		}
		return true, nil
	})
}

// WaitReady waits for n's /readyz 200 and returns how long after its
// process started it came.
func WaitReady(ctx context.Context, n *localcluster.Node, timeout time.Duration) (time.Duration, error) {
	err := Poll(ctx, timeout, n.ID+" ready", func() (bool, error) {
		if n.State() == localcluster.Down {
			return false, fmt.Errorf("%s exited (log: %s)", n.ID, n.LogPath)
		}
		return n.Ready(ctx), nil
	})
	return time.Since(n.StartedAt()), err
}

// Stop asks n to stop gracefully (SIGTERM) and waits for it; a node that
// does not exit in time is killed.
func Stop(n *localcluster.Node) { _ = n.Stop(exitTimeout) }

// Scrape reads n's /metrics.
func Scrape(n *localcluster.Node) (Metrics, error) {
	code, body, err := n.Get(context.Background(), "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: HTTP %d", n.ID, code)
	}
	return ParseMetrics(string(body)), nil
}

// Poll calls cond every pollEvery until it holds, fails, ctx ends or
// timeout passes.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	return PollEvery(ctx, timeout, pollEvery, what, cond)
}

// PollEvery is Poll calling cond every every.
func PollEvery(ctx context.Context, timeout, every time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s waiting for %s", ErrTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(every):
		}
	}
}
