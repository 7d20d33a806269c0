package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A graceful stop snapshots what was applied since the newest snapshot once
// that reaches Raft's threshold, so a restart restores it instead of
// replaying the log; below the threshold it leaves the snapshots alone.
func TestShutdownSnapshotsALongLogTail(t *testing.T) {
	const threshold = 20
	tuned := func(c *Config) {
		c.tune = func(rc *raft.Config) { rc.SnapshotThreshold, rc.SnapshotInterval = threshold, time.Hour }
	}
	for _, tc := range []struct {
		name     string
		puts     int
		snapshot bool
	}{
		{"tail at the threshold", threshold, true},
		{"tail below it", threshold / 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newCluster(t, 1, tuned).waitLeader(10 * time.Second)
			for i := range tc.puts {
				put(t, n.node, fmt.Sprintf("job-%d", i), "@hourly")
			}
			applied := n.node.fsm.applied.Load()
			n.stop()
			metas, err := n.node.fsm.snaps.List()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.snapshot && (len(metas) == 0 || metas[0].Index != applied):
				t.Errorf("snapshots after the stop: %v, want one at the applied index %d", metas, applied)
			case !tc.snapshot && len(metas) != 0:
				t.Errorf("a stop %d entries after the start took a snapshot: %v", applied, metas)
			}
		})
	}
}
