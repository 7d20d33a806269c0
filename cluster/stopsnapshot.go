package cluster

import (
	"context"
	"time"
)

// snapshotBeforeStop has Raft snapshot the FSM when at least Raft's
// SnapshotThreshold entries were applied since the newest snapshot. On
// start hashicorp/raft restores the newest snapshot, then reads every entry
// after it (to find configuration changes) and applies them all again
// before the node is ready: 120,000 entries after a bulk load cost a
// restarted node of a million jobs over two seconds, more than the restore
// of a snapshot that already holds them. A graceful stop has the time to
// spare; a crashed node still replays what followed its last snapshot.
func (n *Node) snapshotBeforeStop(ctx context.Context) {
	applied := n.fsm.applied.Load()
	var last uint64
	if metas, err := n.fsm.snaps.List(); err == nil && len(metas) > 0 {
		last = metas[0].Index
	}
	if applied < last+n.rc.SnapshotThreshold {
		return
	}
	start := time.Now()
	if err := waitFuture(ctx, n.raft.Snapshot()); err != nil {
		n.log.Warn("snapshot before shutdown failed", "error", err)
		return
	}
	n.log.Info("took a snapshot before shutdown", "entries_after_the_last", applied-last, "took", time.Since(start))
}
