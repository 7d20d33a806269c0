package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/internal/testutil"
)

// G3 across a restore: a snapshot saved early is restored into the cluster
// after it has issued more tokens. Every attempt after the restore carries
// a token above every token issued before it, on the leader and, once a
// leader change hands the firing to a follower that installed the
// restored snapshot, on the new leader too. The three nodes end with the
// same state and counter.
func TestRestoreOfAnOldSnapshotNeverLowersTheFencingCounter(t *testing.T) {
	sc := startScenario(t)
	leader := sc.tc.waitLeader(3, 10*time.Second)
	var file bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := backup.Save(ctx, leader.raft(), time.Now, &file); err != nil {
		t.Fatalf("save: %v", err)
	}
	old, err := backup.Inspect(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}

	sc.waitSlots(3)
	issued := leader.fsm().FencingToken()
	if issued <= old.Snapshot.FencingCounter {
		t.Fatalf("setup: counter %d, not above the snapshot's %d", issued, old.Snapshot.FencingCounter)
	}
	res, err := backup.Restore(ctx, leader.raft(), leader.fsm(), old, t.TempDir(), backup.Options{Principal: "test", Now: time.Now()})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	restored := time.Now()
	if res.FencingCounter < issued || res.FileFencingCounter != old.Snapshot.FencingCounter || !res.KeptLive {
		t.Fatalf("restore result %+v: want the counter at least %d, the file's %d, the live state kept", res, issued, old.Snapshot.FencingCounter)
	}
	t.Logf("snapshot counter %d, %d issued since, restored at index %d with counter %d",
		old.Snapshot.FencingCounter, issued, res.Index, res.FencingCounter)

	// Attempts already on the wire when the restore began may still
	// arrive; every one after that carries a new token.
	afterRestore := restored.Add(time.Second)
	sc.waitFiring(afterRestore)
	wantTokensAbove(t, sc.sink.deliveries(), afterRestore, res.FencingCounter)
	wantEachTokenOnce(t, sc.sink.deliveries())

	// A follower took the restored snapshot from the leader; once it leads,
	// it issues tokens from the same, raised counter.
	if _, err := leader.raft().TransferLeadership(ctx, ""); err != nil {
		t.Fatalf("transfer leadership: %v", err)
	}
	next := sc.tc.waitLeader(3, 15*time.Second)
	if next == leader {
		t.Fatalf("%s still leads after the transfer", leader.id)
	}
	handedOver := time.Now().Add(time.Second)
	sc.waitFiring(handedOver)
	wantTokensAbove(t, sc.sink.deliveries(), handedOver, res.FencingCounter)
	wantEachTokenOnce(t, sc.sink.deliveries())

	for _, n := range sc.tc.nodes {
		n.sched().Stop()
	}
	testutil.WaitFor(t, 15*time.Second, "the three nodes to apply the same log and agree", func() bool {
		ref := sc.tc.nodes[0]
		want, hash := ref.raft().Status().GetLastLogIndex(), ref.fsm().StateHash()
		for _, n := range sc.tc.nodes {
			st := n.raft().Status()
			if st.GetAppliedIndex() != want || n.fsm().StateHash() != hash {
				return false
			}
		}
		return true
	})
	for _, n := range sc.tc.nodes {
		if got := n.fsm().FencingToken(); got <= res.FencingCounter {
			t.Errorf("%s ends with counter %d, not above the restored %d", n.id, got, res.FencingCounter)
		}
	}
}

// wantEachTokenOnce fails if a token reached the sink twice: each attempt
// is delivered once, so a second delivery is a token issued again. The
// slots between the snapshot and the restore fire again after it (the
// ledger went back), and with a counter that went back they would carry
// the very tokens they had the first time.
func wantEachTokenOnce(t *testing.T, log []delivery) {
	t.Helper()
	first := map[uint64]delivery{}
	for _, d := range log {
		if prev, ok := first[d.Token]; ok {
			t.Errorf("G3: token %d delivered twice: %+v, then %+v", d.Token, prev, d)
			continue
		}
		first[d.Token] = d
	}
}

// wantTokensAbove fails unless every delivery received from since on
// carries a token above floor, and there is one.
func wantTokensAbove(t *testing.T, log []delivery, since time.Time, floor uint64) {
	t.Helper()
	seen := 0
	for _, d := range log {
		if d.Received.Before(since) {
			continue
		}
		seen++
		if d.Token <= floor {
			t.Errorf("G3: delivery %+v carries token %d, not above %d issued before the restore", d, d.Token, floor)
		}
	}
	if seen == 0 {
		t.Error(fmt.Sprintf("no delivery since %s", since.Format(time.RFC3339Nano)))
	}
}
