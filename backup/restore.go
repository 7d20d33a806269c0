package backup

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
)

// Target is the leader a backup is restored into.
type Target interface {
	RestoreSnapshot(ctx context.Context, from cluster.SnapshotInfo, prepare cluster.RestoreFunc) (uint64, error)
}

// Counter reads the fencing counter of the live state.
type Counter interface {
	FencingToken() uint64
}

// Result is what a restore did.
type Result struct {
	// Index is where the restored state starts in the Raft log.
	Index uint64
	// FencingCounter is the counter after the restore; FileFencingCounter
	// the one the file held.
	FencingCounter     uint64
	FileFencingCounter uint64
	Snapshot           fsm.SnapshotSummary
}

// Restore replaces the state of the whole cluster with the backup file f
// (which Inspect accepted), through t, the leader. The snapshot goes in
// with two changes, written to a scratch copy in scratchDir first:
//
//   - every run in flight in it becomes an orphan (fsm.OrphanDispatched):
//     the leader re-dispatches it with a new token or marks it unknown;
//   - the fencing counter never goes back: it becomes the larger of the
//     file's and the cluster's, read while the leader proposes nothing, so
//     every later token is above every token issued before the restore.
//
// Both are in the stream Raft restores, so the followers, which install
// the leader's copy of it, end with the same state.
func Restore(ctx context.Context, t Target, c Counter, f *File, scratchDir string) (Result, error) {
	res := Result{FileFencingCounter: f.Snapshot.FencingCounter, Snapshot: f.Snapshot}
	scratch, err := os.CreateTemp(scratchDir, "restore-*.snapshot")
	if err != nil {
		return res, fmt.Errorf("backup: restore: scratch copy: %w", err)
	}
	defer func() {
		_ = scratch.Close()
		_ = os.Remove(scratch.Name())
	}()
	if err := fsm.OrphanDispatched(scratch, f.Body()); err != nil {
		return res, fmt.Errorf("backup: restore: scratch copy: %w", err)
	}
	size, err := scratch.Seek(0, io.SeekCurrent)
	if err != nil {
		return res, fmt.Errorf("backup: restore: scratch copy: %w", err)
	}
	from := cluster.SnapshotInfo{Index: f.Header.GetIndex(), Term: f.Header.GetTerm(), NodeID: f.Header.GetNodeId()}
	res.Index, err = t.RestoreSnapshot(ctx, from, func() (io.Reader, int64, error) {
		floor := c.FencingToken()
		r, grown, err := fsm.WithCounterFloor(io.NewSectionReader(scratch, 0, size), floor)
		res.FencingCounter = max(floor, res.FileFencingCounter)
		return r, size + grown, err
	})
	if err != nil {
		return res, err
	}
	return res, nil
}
