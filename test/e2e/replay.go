package e2e

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ReplayDataDir rebuilds a stopped node's run ledger from its data dir:
// the Raft log (after the newest snapshot, if the log no longer starts at
// its beginning) applied to a fresh state machine, up to and including
// log index upTo (0: the whole log). Entries beyond the commit index may
// sit uncommitted at the tail of a log, so callers pass the index every
// node is known to have committed.
//
// The replay goes through the product's own state machine: it reads what
// the node would have applied, and records in log order every fire the
// state machine accepted (the ledger itself forgets pruned runs).
func ReplayDataDir(node, dir string, upTo uint64) (NodeLedger, error) {
	l := NodeLedger{Node: node, Source: "data-dir"}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: 2 * time.Second},
	})
	if err != nil {
		return l, fmt.Errorf("%s: open raft.db: %w", node, err)
	}
	defer store.Close()
	first, err := store.FirstIndex()
	if err != nil {
		return l, err
	}
	last, err := store.LastIndex()
	if err != nil {
		return l, err
	}
	if upTo == 0 || upTo > last {
		upTo = last
	}
	state := fsm.New()
	start := first
	if first > 1 {
		idx, err := restoreSnapshot(state, dir, first, upTo)
		if err != nil {
			return l, fmt.Errorf("%s: %w", node, err)
		}
		start = idx + 1
	}
	l.FirstIndex = start
	// walked is the last entry read: the state reflects it even when it is
	// one the state machine never sees (a barrier, a no-op), as a node's
	// applied index does.
	walked := start - 1
	for i := start; i <= upTo && i != 0; i++ {
		var entry raft.Log
		if err := store.GetLog(i, &entry); err != nil {
			return l, fmt.Errorf("%s: log entry %d: %w", node, i, err)
		}
		walked = i
		if entry.Type != raft.LogCommand {
			continue
		}
		res, _ := state.Apply(&entry).(*pb.CommandResult)
		l.Fires = append(l.Fires, acceptedFires(&entry, res)...)
	}
	for _, r := range state.ListRuns("", 0) {
		l.Runs = append(l.Runs, runFromProto(r))
	}
	l.Index = max(state.AppliedIndex(), walked)
	l.Token = state.FencingToken()
	sum := state.StateHash()
	l.StateHash = hex.EncodeToString(sum[:])
	return l, nil
}

// restoreSnapshot loads the newest snapshot the log continues from (its
// index at least first-1, at most upTo) and returns its index.
func restoreSnapshot(state *fsm.FSM, dir string, first, upTo uint64) (uint64, error) {
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		return 0, fmt.Errorf("snapshot store: %w", err)
	}
	metas, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("list snapshots: %w", err)
	}
	for _, m := range metas { // newest first
		if m.Index+1 < first || m.Index > upTo {
			continue
		}
		_, rc, err := snaps.Open(m.ID)
		if err != nil {
			return 0, fmt.Errorf("open snapshot %s: %w", m.ID, err)
		}
		err = state.Restore(rc)
		if err != nil {
			return 0, fmt.Errorf("restore snapshot %s: %w", m.ID, err)
		}
		return m.Index, nil
	}
	return 0, fmt.Errorf("the log starts at %d and no snapshot covers the entries before it", first)
}

// acceptedFires lists the fires of an entry, with the tokens the state
// machine gave them, in token order: a FireBatch's fires that its result
// accepted, and the chained runs a CompleteBatch or FireBatch fired.
func acceptedFires(entry *raft.Log, res *pb.CommandResult) []LogFire {
	var cmd pb.Command
	if res == nil || proto.Unmarshal(entry.Data, &cmd) != nil {
		return nil
	}
	out := chainedFires(entry, res)
	if fb := cmd.GetFireBatch(); fb != nil {
		out = append(out, batchFires(entry, fb, res)...)
	}
	slices.SortFunc(out, func(a, b LogFire) int { return cmp.Compare(a.Token, b.Token) })
	return out
}

// chainedFires are the chained runs an entry fired.
func chainedFires(entry *raft.Log, res *pb.CommandResult) []LogFire {
	var out []LogFire
	for _, r := range res.GetChained() {
		a := fsm.CurrentAttempt(r)
		if a == nil {
			continue // a skipped or missed record
		}
		out = append(out, LogFire{
			Index: entry.Index, Term: entry.Term, Token: a.GetToken(), RunID: r.GetId(), Job: r.GetJob(),
			Slot: r.GetSlotUnix(), Number: a.GetNumber(), Kind: kindName(r.GetKind()), Node: a.GetNodeId(),
		})
	}
	return out
}

// batchFires are the fires of a FireBatch its result accepted.
func batchFires(entry *raft.Log, fb *pb.FireBatchCommand, res *pb.CommandResult) []LogFire {
	var out []LogFire
	for i, r := range res.GetFires() {
		if !r.GetAccepted() || i >= len(fb.GetFires()) {
			continue
		}
		f := fb.GetFires()[i]
		slot := f.GetSlotUnix()
		if run := r.GetRun(); run != nil {
			slot = run.GetSlotUnix()
		}
		out = append(out, LogFire{
			Index: entry.Index, Term: entry.Term, Token: r.GetToken(), RunID: r.GetRunId(),
			Job: f.GetJob(), Slot: slot, Number: r.GetAttempt(), Kind: kindName(f.GetKind()), Node: fb.GetLeaderId(),
		})
	}
	return out
}
