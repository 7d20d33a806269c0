package backup

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Target is the leader a backup is restored into.
type Target interface {
	RestoreSnapshot(ctx context.Context, from cluster.SnapshotInfo, prepare cluster.RestoreFunc) (uint64, error)
}

// Live is the cluster's state as it is when the restore happens (fsm.FSM):
// what the restore keeps of it is the FSM's rule (fsm.UserRestore).
type Live interface {
	ACLBootstrapped() bool
	UserRestore(file io.ReaderAt, size int64, l fsm.Layout, rec fsm.RestoreRecord) (fsm.UserRestore, error)
}

// ErrBeforeBootstrap: the file was taken before the cluster bootstrapped
// its ACLs. Restored whole (below cluster version 3) it would reopen
// bootstrap to anyone who reaches the API first; restored into the live
// ACLs it holds jobs nobody had to authenticate for. Options.Force
// restores it anyway.
var ErrBeforeBootstrap = errors.New("the snapshot file was taken before this cluster bootstrapped its ACLs")

// Options are what the caller asks of a restore.
type Options struct {
	// Force restores a file taken before the cluster bootstrapped its ACLs.
	Force bool
	// Principal and Now go into the audit record of the restore: who asked,
	// and the leader's clock.
	Principal string
	Now       time.Time
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
	// KeptLive: the live state but jobs, runs and counter was kept (cluster
	// version 3 on); false, the file replaced the whole state.
	KeptLive bool
}

// Restore rolls the cluster back to the backup file f (which Inspect
// accepted), through t, the leader. The snapshot goes in with these
// changes, written to a scratch copy in scratchDir first:
//
//   - every run in flight in it becomes an orphan (fsm.OrphanDispatched):
//     the leader re-dispatches it with a new token or marks it unknown;
//   - the fencing counter never goes back: it becomes the larger of the
//     file's and the cluster's, read while the leader proposes nothing, so
//     every later token is above every token issued before the restore;
//   - from cluster version 3, only the jobs and runs come from the file:
//     the ACL tokens, the audit trail (with a record of this restore) and
//     every other piece of live state stay as they are (fsm.UserRestore).
//
// All of it is in the stream Raft restores, so the followers, which
// install the leader's copy of it, end with the same state. A file taken
// before the cluster bootstrapped its ACLs is refused (ErrBeforeBootstrap)
// unless o.Force.
func Restore(ctx context.Context, t Target, live Live, f *File, scratchDir string, o Options) (Result, error) {
	res := Result{FileFencingCounter: f.Snapshot.FencingCounter, Snapshot: f.Snapshot}
	if err := checkBootstrap(live, f, o); err != nil {
		return res, err // before the copy; checked again below, where it holds
	}
	scratch, err := os.CreateTemp(scratchDir, "restore-*.snapshot")
	if err != nil {
		return res, fmt.Errorf("backup: restore: scratch copy: %w", err)
	}
	defer func() {
		_ = scratch.Close()
		_ = os.Remove(scratch.Name())
	}()
	layout, err := fsm.OrphanDispatched(scratch, f.Body())
	if err != nil {
		return res, fmt.Errorf("backup: restore: scratch copy: %w", err)
	}
	size, err := scratch.Seek(0, io.SeekCurrent)
	if err != nil {
		return res, fmt.Errorf("backup: restore: scratch copy: %w", err)
	}
	from := cluster.SnapshotInfo{Index: f.Header.GetIndex(), Term: f.Header.GetTerm(), NodeID: f.Header.GetNodeId()}
	res.Index, err = t.RestoreSnapshot(ctx, from, func() (io.Reader, int64, error) {
		if err := checkBootstrap(live, f, o); err != nil {
			return nil, 0, err
		}
		ur, err := live.UserRestore(scratch, size, layout, restoreRecord(f, o))
		res.FencingCounter, res.KeptLive = ur.FencingCounter, ur.KeptLive
		return ur.Stream, ur.Size, err
	})
	if err != nil {
		return res, err
	}
	return res, nil
}

func checkBootstrap(live Live, f *File, o Options) error {
	if o.Force || f.Snapshot.ACLBootstrapped || !live.ACLBootstrapped() {
		return nil
	}
	return fmt.Errorf("backup: restore: %w (file taken at index %d, %s); nothing changed",
		ErrBeforeBootstrap, f.Header.GetIndex(), f.Header.GetTakenAt().AsTime().UTC().Format(time.RFC3339))
}

// restoreRecord says in the audit trail who restored which file: its
// header (where and when it was taken) and its checksum.
func restoreRecord(f *File, o Options) fsm.RestoreRecord {
	h := f.Header
	file := []*pb.AuditChange{
		{Field: "file.index", After: strconv.FormatUint(h.GetIndex(), 10)},
		{Field: "file.term", After: strconv.FormatUint(h.GetTerm(), 10)},
		{Field: "file.taken_at", After: h.GetTakenAt().AsTime().UTC().Format(time.RFC3339Nano)},
		{Field: "file.node_id", After: h.GetNodeId()},
		{Field: "file.sha256", After: hex.EncodeToString(f.SHA256[:])},
	}
	if o.Force {
		file = append(file, &pb.AuditChange{Field: "force", Before: "false", After: "true"})
	}
	return fsm.RestoreRecord{Principal: o.Principal, AtUnixNano: o.Now.UnixNano(), File: file}
}
