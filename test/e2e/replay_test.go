package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// writeLog stores cmds as log entries 2.. of term 2 in dir/raft.db, after
// a configuration entry at index 1.
func writeLog(t *testing.T, dir string, cmds ...*pb.Command) {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogConfiguration}}
	for i, c := range cmds {
		data, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 2), Term: 2, Type: raft.LogCommand, Data: data})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

func fireBatch(at int64, fires ...*pb.Fire) *pb.Command {
	return &pb.Command{ProposedAtUnixNano: at * int64(time.Second),
		Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{LeaderId: "n1", Term: 2, Fires: fires}}}
}

func slotFire(slot int64) *pb.Fire {
	return &pb.Fire{Job: "a", Generation: 1, SlotUnix: slot, Kind: pb.FireKind_FIRE_KIND_SCHEDULED}
}

func TestReplayDataDirRebuildsTheLedgerInLogOrder(t *testing.T) {
	dir := t.TempDir()
	put := &pb.Command{ProposedAtUnixNano: t0 * int64(time.Second), Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{
		Mode: pb.PutMode_PUT_MODE_CREATE,
		Spec: &pb.JobSpec{Name: "a", Schedule: "@every 1s", Overlap: pb.Overlap_OVERLAP_ALLOW,
			Http: &pb.HttpTarget{Url: "http://127.0.0.1:1/"}},
	}}}
	writeLog(t, dir,
		put,                             // index 2
		fireBatch(t0+1, slotFire(t0+1)), // index 3: token 1
		fireBatch(t0+2, slotFire(t0+2), slotFire(t0+1)), // index 4: token 2, then a duplicate
	)
	l, err := ReplayDataDir("n1", dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != 4 || l.Token != 2 || len(l.Runs) != 2 || l.StateHash == "" {
		t.Fatalf("replay: index %d, token %d, %d runs, hash %q; want 4, 2, 2 runs, a hash", l.Index, l.Token, len(l.Runs), l.StateHash)
	}
	want := []LogFire{
		{Index: 3, Term: 2, Token: 1, RunID: "a-1", Job: "a", Slot: t0 + 1, Number: 1, Kind: "SCHEDULED", Node: "n1"},
		{Index: 4, Term: 2, Token: 2, RunID: "a-2", Job: "a", Slot: t0 + 2, Number: 1, Kind: "SCHEDULED", Node: "n1"},
	}
	if len(l.Fires) != len(want) {
		t.Fatalf("fires = %+v, want %+v", l.Fires, want)
	}
	for i := range want {
		if l.Fires[i] != want[i] {
			t.Fatalf("fire %d = %+v, want %+v", i, l.Fires[i], want[i])
		}
	}

	// Up to index 3 only: the tail is left out, as an uncommitted tail
	// must be.
	l, err = ReplayDataDir("n1", dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != 3 || l.Token != 1 || len(l.Fires) != 1 {
		t.Fatalf("replay to 3: index %d, token %d, %d fires; want 3, 1, 1", l.Index, l.Token, len(l.Fires))
	}
}

// A log may end in entries the state machine never sees: the leader's
// barriers, which announce its commit index, follow a wave's outcomes.
// The replay still reflects the log up to them.
func TestReplayDataDirReachesATrailingBarrier(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, fireBatch(t0+1)) // index 2
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	err = store.StoreLog(&raft.Log{Index: 3, Term: 2, Type: raft.LogBarrier})
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	l, err := ReplayDataDir("n1", dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != 3 {
		t.Fatalf("replay up to a barrier at 3 reached index %d", l.Index)
	}
}

func TestReplayDataDirWithoutAStore(t *testing.T) {
	if _, err := ReplayDataDir("n1", filepath.Join(t.TempDir(), "missing"), 0); err == nil {
		t.Fatal("replaying a data dir without raft.db succeeded")
	}
}
