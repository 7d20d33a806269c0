package fsm_test

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// userRestore runs a user restore of file into live as the backup package
// does, and returns what UserRestore made of it.
func userRestore(t *testing.T, live *fsm.FSM, file []byte, rec fsm.RestoreRecord) fsm.UserRestore {
	t.Helper()
	var orphaned bytes.Buffer
	l, err := fsm.OrphanDispatched(&orphaned, bytes.NewReader(file))
	if err != nil {
		t.Fatalf("OrphanDispatched: %v", err)
	}
	data := orphaned.Bytes()
	ur, err := live.UserRestore(bytes.NewReader(data), int64(len(data)), l, rec)
	if err != nil {
		t.Fatalf("UserRestore: %v", err)
	}
	stream, err := io.ReadAll(ur.Stream)
	if err != nil || int64(len(stream)) != ur.Size {
		t.Fatalf("stream of %d bytes (%v), UserRestore announced %d", len(stream), err, ur.Size)
	}
	if err := restore(live, stream); err != nil {
		t.Fatalf("Restore of the user restore's stream: %v", err)
	}
	return ur
}

func tokenNames(f *fsm.FSM) []string {
	var names []string
	for _, t := range f.ACLTokens() {
		names = append(names, t.GetName())
	}
	return names
}

// TestUserRestoreKeepsTheLiveStateButJobsRunsAndCounter: the file brings
// its jobs, tombstones and runs; the counter never goes back; the ACL
// tokens, the bootstrap flag and the audit trail stay as they are live,
// and the trail records the restore with the file's header.
func TestUserRestoreKeepsTheLiveStateButJobsRunsAndCounter(t *testing.T) {
	h := newHarness(t)
	h.mustOK(&pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 50}}})
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.mustOK(createTokenCmd(aclToken("leaked", pb.AclRole_ACL_ROLE_WRITE, nil)))
	h.create(testSpec("nightly"))
	h.finish(h.accepted(manualFire("nightly", "", false)).GetRun(), stSucceeded, h.now)
	file := persist(t, h.f)

	h.mustOK(deleteTokenCmd("acc-leaked"))
	h.create(testSpec("later"))
	h.accepted(manualFire("later", "", false))
	trail := h.f.ListAudit(fsm.AuditQuery{})
	counter := h.f.FencingToken()

	rec := fsm.RestoreRecord{Principal: "ops", AtUnixNano: 42, File: []*pb.AuditChange{{Field: "file.index", After: "7"}}}
	ur := userRestore(t, h.f, file, rec)
	if !ur.KeptLive || ur.FencingCounter != counter || h.f.FencingToken() != counter {
		t.Fatalf("user restore %+v, counter now %d; want the live state kept and counter %d", ur, h.f.FencingToken(), counter)
	}
	if names := tokenNames(h.f); !slices.Equal(names, []string{"root"}) || !h.f.ACLBootstrapped() {
		t.Fatalf("tokens %v (bootstrapped %v), want the live ones: root only", names, h.f.ACLBootstrapped())
	}
	if _, err := h.f.Job("later"); err == nil {
		t.Fatal("a job created after the file survived the restore")
	}
	if len(h.f.ListRuns("nightly", 0)) != 1 || len(h.f.ListRuns("later", 0)) != 0 {
		t.Fatal("the ledger is not the file's")
	}
	after := h.f.ListAudit(fsm.AuditQuery{})
	if len(after) != len(trail)+1 || after[0].GetAction() != fsm.AuditSnapshotRestore {
		t.Fatalf("audit trail of %d records, newest %v; want the live %d and the restore's", len(after), after[0], len(trail))
	}
	r := after[0]
	if r.GetSeq() != trail[0].GetSeq()+1 || r.GetPrincipal() != "ops" || r.GetAtUnixNano() != 42 {
		t.Fatalf("restore record %v", r)
	}
	want := map[string][2]string{"jobs": {"2", "1"}, "fencing_counter": {strconv.FormatUint(counter, 10), strconv.FormatUint(counter, 10)}, "file.index": {"", "7"}}
	for _, c := range r.GetChanges() {
		if w, ok := want[c.GetField()]; ok && (c.GetBefore() != w[0] || c.GetAfter() != w[1]) {
			t.Errorf("change %v, want %v", c, w)
		}
		delete(want, c.GetField())
	}
	if len(want) > 0 {
		t.Errorf("restore record lacks %v", want)
	}
}

// A user restore of a state's own snapshot, with its trail off, gives back
// exactly that state: the stream it splices together loses nothing, so
// whatever a later build adds to the header or after the ledger is kept.
func TestUserRestoreOfItsOwnSnapshotChangesNothing(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.create(testSpec("nightly"))
	h.finish(h.accepted(manualFire("nightly", "", false)).GetRun(), stSucceeded, h.now)
	h.mustOK(deleteCmd("nightly", 0))
	want := h.f.StateHash()
	userRestore(t, h.f, persist(t, h.f), fsm.RestoreRecord{})
	if h.f.StateHash() != want {
		t.Fatal("a user restore of the state's own snapshot changed it")
	}
}

// Below cluster version 3 the file replaces the whole state, counter
// raised, as release 2 did: nodes of that release may still be voters.
func TestUserRestoreBeforeVersion3ReplacesTheWholeState(t *testing.T) {
	h := newHarnessAt(t, 2)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.mustOK(createTokenCmd(aclToken("leaked", pb.AclRole_ACL_ROLE_WRITE, nil)))
	file := persist(t, h.f)
	h.mustOK(deleteTokenCmd("acc-leaked"))
	if ur := userRestore(t, h.f, file, fsm.RestoreRecord{}); ur.KeptLive {
		t.Fatal("version 2 kept the live state")
	}
	if names := tokenNames(h.f); !slices.Equal(names, []string{"leaked", "root"}) {
		t.Fatalf("tokens %v, want the file's", names)
	}
}
