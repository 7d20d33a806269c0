package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// saveSnapshot takes a snapshot on tn and returns it.
func saveSnapshot(t *testing.T, tn *testNode) (SnapshotInfo, []byte) {
	t.Helper()
	info, rc, err := tn.node.TakeSnapshot(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("TakeSnapshot on %s: %v", tn.id, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read snapshot: %v", err)
	}
	if int64(len(data)) != info.Size {
		t.Fatalf("snapshot of %d bytes, info says %d", len(data), info.Size)
	}
	return info, data
}

func kvOf(t *testing.T, data []byte) map[string]string {
	t.Helper()
	kv := map[string]string{}
	if err := json.Unmarshal(data, &kv); err != nil {
		t.Fatalf("snapshot does not decode: %v", err)
	}
	return kv
}

// restoreBytes restores data into the cluster through tn.
func restoreBytes(tn *testNode, from SnapshotInfo, data []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return tn.node.RestoreSnapshot(ctx, from, func() (io.Reader, int64, error) {
		return bytes.NewReader(data), int64(len(data)), nil
	})
}

func TestTakeSnapshotHasEveryCommittedWrite(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, tc.followers(leader)[0].node, "a", "@hourly")
	res := put(t, leader.node, "b", "@daily")
	info, data := saveSnapshot(t, leader)
	if kv := kvOf(t, data); kv["a"] != "@hourly" || kv["b"] != "@daily" {
		t.Fatalf("snapshot holds %v, want a and b", kv)
	}
	if info.Index < leader.node.raft.AppliedIndex()-1 || info.Term != leader.node.raft.CurrentTerm() || info.NodeID != leader.id {
		t.Fatalf("info %+v: want the leader's applied index %d, term %d, node %s (put %v)",
			info, leader.node.raft.AppliedIndex(), leader.node.raft.CurrentTerm(), leader.id, res)
	}
	for _, f := range tc.followers(leader) {
		if _, _, err := f.node.TakeSnapshot(ctxTimeout(t, 5*time.Second)); !errors.Is(err, ErrNotLeader) {
			t.Errorf("TakeSnapshot on follower %s: %v, want ErrNotLeader", f.id, err)
		}
	}
}

// A restore replaces the state on every node, followers included, and the
// cluster goes on from it: writes after it, and a new leader, see the
// restored state.
func TestRestoreSnapshotReplacesStateOnEveryNode(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "a", "@hourly")
	put(t, leader.node, "b", "@daily")
	info, data := saveSnapshot(t, leader)
	put(t, leader.node, "c", "@weekly")
	put(t, leader.node, "a", "@yearly")
	before := leader.node.raft.LastIndex()

	idx, err := restoreBytes(leader, info, data)
	if err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	if idx <= before {
		t.Errorf("restored at index %d, want above the log's last index %d", idx, before)
	}
	want := map[string]string{"a": "@hourly", "b": "@daily"}
	for _, tn := range tc.nodes {
		testutil.WaitFor(t, 10*time.Second, "the restored state on "+tn.id, func() bool {
			return tn.fsm.len() == len(want) && tn.fsm.mustGet("a") == want["a"] && tn.fsm.mustGet("b") == want["b"]
		})
	}

	put(t, leader.node, "d", "@monthly")
	// A follower restarted in the same term, on a log with the hole the
	// restore left, must become ready again.
	f := tc.followers(leader)[0]
	f.stop()
	var peers []Peer
	for _, tn := range tc.nodes {
		peers = append(peers, Peer{ID: tn.id, Addr: tn.addr})
	}
	restarted := startNode(t, f.id, f.dir, listen(t, f.addr), func(c *Config) { c.Peers = peers })
	tc.nodes[slices.Index(tc.nodes, f)] = restarted
	testutil.WaitFor(t, 10*time.Second, restarted.id+" ready after its restart", restarted.node.Ready)
	if _, err := leader.node.TransferLeadership(ctxTimeout(t, 10*time.Second), ""); err != nil {
		t.Fatalf("TransferLeadership: %v", err)
	}
	next := tc.waitLeader(10 * time.Second)
	put(t, next.node, "e", "@hourly")
	for _, tn := range tc.nodes {
		testutil.WaitFor(t, 10*time.Second, "a, b, d, e and no c on "+tn.id, func() bool {
			_, c := tn.fsm.get("c")
			return tn.fsm.len() == 4 && !c && tn.fsm.mustGet("d") == "@monthly"
		})
		testutil.WaitFor(t, 10*time.Second, tn.id+" ready", tn.node.Ready)
	}
}

// While prepare runs, this node proposes nothing: what prepare reads from
// the FSM (there, the fencing counter) cannot change before the restore.
// A proposal made meanwhile waits and lands after the restore.
func TestRestoreSnapshotHoldsProposalsWhilePreparing(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "a", "@hourly")
	info, data := saveSnapshot(t, leader)

	var late atomic.Bool
	proposed := make(chan error, 1)
	ctx := ctxTimeout(t, 20*time.Second)
	_, err := leader.node.RestoreSnapshot(ctx, info, func() (io.Reader, int64, error) {
		go func() {
			_, err := leader.node.Apply(ctx, putCmd("late", "@daily"))
			late.Store(true)
			proposed <- err
		}()
		// Enough for the proposal to reach the gate, were it open.
		time.Sleep(200 * time.Millisecond)
		if late.Load() {
			return nil, 0, errors.New("a proposal went through while the restore prepared")
		}
		return bytes.NewReader(data), int64(len(data)), nil
	})
	if err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	select {
	case err := <-proposed:
		if err != nil {
			t.Fatalf("the held proposal failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held proposal never went through after the restore")
	}
	if leader.fsm.mustGet("late") != "@daily" || leader.fsm.mustGet("a") != "@hourly" {
		t.Fatal("the held proposal did not land on top of the restored state")
	}
}

func TestRestoreSnapshotChangesNothingWhenItCannotStart(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "a", "@hourly")
	info, data := saveSnapshot(t, leader)
	put(t, leader.node, "b", "@daily")

	f := tc.followers(leader)[0]
	if _, err := restoreBytes(f, info, data); !errors.Is(err, ErrNotLeader) {
		t.Errorf("restore on follower: %v, want ErrNotLeader", err)
	}
	boom := errors.New("boom")
	_, err := leader.node.RestoreSnapshot(ctxTimeout(t, 10*time.Second), info, func() (io.Reader, int64, error) {
		return nil, 0, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("restore with a failing prepare: %v, want boom", err)
	}
	// A wrong size makes Raft refuse before the FSM sees anything.
	if _, err := leader.node.RestoreSnapshot(ctxTimeout(t, 10*time.Second), info, func() (io.Reader, int64, error) {
		return bytes.NewReader(data), int64(len(data)) + 1, nil
	}); err == nil || errors.Is(err, ErrIndeterminate) {
		t.Errorf("restore with a wrong size: %v, want a plain refusal", err)
	}
	put(t, leader.node, "c", "@weekly") // proposals flow again
	for _, tn := range tc.nodes {
		testutil.WaitFor(t, 10*time.Second, "a, b and c on "+tn.id, func() bool { return tn.fsm.len() == 3 })
	}
}

func TestOneRestoreAtATime(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "a", "@hourly")
	info, data := saveSnapshot(t, leader)
	ctx := ctxTimeout(t, 20*time.Second)
	var second error
	_, err := leader.node.RestoreSnapshot(ctx, info, func() (io.Reader, int64, error) {
		_, second = restoreBytes(leader, info, data)
		return bytes.NewReader(data), int64(len(data)), nil
	})
	if err != nil {
		t.Fatalf("first restore: %v", err)
	}
	if !errors.Is(second, ErrRestoreRunning) {
		t.Fatalf("second restore during the first: %v, want ErrRestoreRunning", second)
	}
}
