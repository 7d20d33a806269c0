package fsm_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestInspectSnapshotCountsWhatRestoreWouldRead(t *testing.T) {
	h := busyLedger(t)
	data := persist(t, h.f)
	sum, err := fsm.InspectSnapshot(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("InspectSnapshot: %v", err)
	}
	want := fsm.SnapshotSummary{
		FormatVersion:  1,
		FencingCounter: h.f.FencingToken(),
		Jobs:           h.f.JobCount(),
		Tombstones:     1, // doomed
		Runs:           len(h.f.ListRuns("", 1000)),
		OpenRuns:       len(h.f.OpenRuns()),
	}
	if sum != want {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
	if want.OpenRuns < 3 || want.FencingCounter == 0 {
		t.Fatalf("setup: the ledger should hold open runs and tokens: %+v", want)
	}
}

func TestInspectSnapshotRefusesWhatRestoreRefuses(t *testing.T) {
	data := persist(t, busyLedger(t).f)
	cases := map[string][]byte{
		"truncated":        data[:len(data)-3],
		"extra byte":       append(bytes.Clone(data), 0),
		"future version":   stream(t, &pb.SnapshotHeader{FormatVersion: 2}),
		"token over count": stream(t, ledgerHeader(1, 1, 1), jobWithOpen("a", "a-5"), runRecord(openRun("a-5", "a", 5))),
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			_, ierr := fsm.InspectSnapshot(bytes.NewReader(bad))
			rerr := restore(fsm.New(), bad)
			if ierr == nil || rerr == nil {
				t.Fatalf("InspectSnapshot: %v, Restore: %v; want both to refuse", ierr, rerr)
			}
		})
	}
}

// A run in flight in the snapshot keeps its tokens but its current attempt
// goes to term 0: a leader of any term then re-dispatches it. Every other
// record stays byte for byte.
func TestOrphanDispatchedMakesInFlightAttemptsOrphans(t *testing.T) {
	h := busyLedger(t)
	data := persist(t, h.f)
	var out bytes.Buffer
	if _, err := fsm.OrphanDispatched(&out, bytes.NewReader(data)); err != nil {
		t.Fatalf("OrphanDispatched: %v", err)
	}
	r := newHarness(t)
	if err := restore(r.f, out.Bytes()); err != nil {
		t.Fatalf("Restore of the rewritten stream: %v", err)
	}
	r.index, r.now = h.index, h.now

	dispatched := 0
	for _, run := range h.f.ListRuns("", 1000) {
		got, err := r.f.Run(run.GetId())
		if err != nil {
			t.Fatalf("run %s lost: %v", run.GetId(), err)
		}
		want := proto.Clone(run).(*pb.Run)
		if run.GetState() == stDispatched {
			dispatched++
			want.Attempts[len(want.Attempts)-1].Term = 0
		}
		if !proto.Equal(got, want) {
			t.Errorf("run %s = %v, want %v", run.GetId(), got, want)
		}
	}
	if dispatched == 0 {
		t.Fatal("setup: no DISPATCHED run in the snapshot")
	}
	if r.f.FencingToken() != h.f.FencingToken() {
		t.Errorf("counter %d, want %d", r.f.FencingToken(), h.f.FencingToken())
	}

	// The leader's own term no longer makes the run look in hand: it can
	// be re-dispatched, with a new token.
	run := h.f.OpenRuns()[0]
	for _, o := range h.f.OpenRuns() {
		if o.GetState() == stDispatched && o.GetJob() == "buffer" {
			run = o
		}
	}
	h.refused(redispatchFire(run.GetJob(), run.GetId()), "not_orphan")
	res := r.fireOne(redispatchFire(run.GetJob(), run.GetId()))
	if !res.GetAccepted() || res.GetToken() <= h.f.FencingToken() {
		t.Fatalf("re-dispatch after the rewrite: %v, want accepted with a token above %d", res, h.f.FencingToken())
	}
}

func TestOrphanDispatchedKeepsRecordsItDoesNotKnow(t *testing.T) {
	// Field 15 of SnapshotRecord: a record kind of a later build.
	unknown := protowire.AppendTag(nil, 15, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("opaque"))
	var in bytes.Buffer
	in.Write(stream(t, ledgerHeader(0, 0, 0)))
	in.Write(protowire.AppendVarint(nil, uint64(len(unknown))))
	in.Write(unknown)
	var out bytes.Buffer
	if _, err := fsm.OrphanDispatched(&out, bytes.NewReader(in.Bytes())); err != nil {
		t.Fatalf("OrphanDispatched: %v", err)
	}
	if !bytes.Equal(out.Bytes(), in.Bytes()) {
		t.Fatalf("stream changed:\n got %x\nwant %x", out.Bytes(), in.Bytes())
	}
}

func TestOrphanDispatchedRefusesTruncatedStreams(t *testing.T) {
	data := persist(t, busyLedger(t).f)
	for _, cut := range []int{0, 1, len(data) - 1} {
		if _, err := fsm.OrphanDispatched(io.Discard, bytes.NewReader(data[:cut])); err == nil {
			t.Errorf("cut at %d of %d bytes: no error", cut, len(data))
		}
	}
}

func TestWithCounterFloorRaisesButNeverLowers(t *testing.T) {
	h := busyLedger(t)
	data := persist(t, h.f)
	counter := h.f.FencingToken()
	for _, floor := range []uint64{0, counter, counter + 1, 1 << 40} {
		r, delta, err := fsm.WithCounterFloor(bytes.NewReader(data), floor)
		if err != nil {
			t.Fatalf("floor %d: %v", floor, err)
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(out)) != int64(len(data))+delta {
			t.Errorf("floor %d: %d bytes, announced %d", floor, len(out), int64(len(data))+delta)
		}
		restored := fsm.New()
		if err := restore(restored, out); err != nil {
			t.Fatalf("floor %d: Restore: %v", floor, err)
		}
		if got, want := restored.FencingToken(), max(counter, floor); got != want {
			t.Errorf("floor %d: counter %d, want %d", floor, got, want)
		}
	}
}

func TestWithCounterFloorRefusesUnknownFormat(t *testing.T) {
	_, _, err := fsm.WithCounterFloor(bytes.NewReader(stream(t, &pb.SnapshotHeader{FormatVersion: 9})), 5)
	if !errors.Is(err, fsm.ErrSnapshotFormat) {
		t.Fatalf("got %v, want ErrSnapshotFormat", err)
	}
	if _, _, err := fsm.WithCounterFloor(bytes.NewReader(nil), 5); err == nil {
		t.Fatal("empty stream: no error")
	}
	var buf bytes.Buffer
	_, _ = protodelim.MarshalTo(&buf, header(1, 0, 0))
	if _, _, err := fsm.WithCounterFloor(bytes.NewReader(buf.Bytes()[:buf.Len()-1]), 5); err == nil {
		t.Fatal("truncated header: no error")
	}
}

// A restore's two rewrites keep the generation retired with collected
// tombstones, so a name deleted before the backup and re-created after the
// restore still starts above every generation it had (G1), and the ACL
// tokens with the bootstrap mark.
func TestBackupRewritesKeepTheRetiredGenerationAndTheACL(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.create(testSpec("gone"))
	gen := h.retarget("gone", "http://billing.test/v2")
	h.mustOK(deleteCmd("gone", 0))
	data := persist(t, h.f)
	if sum, err := fsm.InspectSnapshot(bytes.NewReader(data)); err != nil || sum.Jobs != 0 || sum.Tombstones != 0 {
		t.Fatalf("InspectSnapshot: %+v, %v; want no jobs and no tombstones", sum, err)
	}
	var orphaned bytes.Buffer
	if _, err := fsm.OrphanDispatched(&orphaned, bytes.NewReader(data)); err != nil {
		t.Fatalf("OrphanDispatched: %v", err)
	}
	raised, _, err := fsm.WithCounterFloor(&orphaned, 1<<40)
	if err != nil {
		t.Fatalf("WithCounterFloor: %v", err)
	}
	out, err := io.ReadAll(raised)
	if err != nil {
		t.Fatal(err)
	}
	restored := fsm.New()
	if err := restore(restored, out); err != nil {
		t.Fatalf("Restore of the rewritten stream: %v", err)
	}
	hd := snapshotHeader(t, restored)
	if got := hd.GetRetiredGeneration(); got != gen {
		t.Fatalf("retired generation %d after the rewrites, want %d", got, gen)
	}
	if _, ok := restored.ACLToken(secretHash("secret-root")); !ok || !hd.GetAclBootstrapped() {
		t.Fatalf("after the rewrites: token found %v, bootstrapped %v; want both", ok, hd.GetAclBootstrapped())
	}
	r := newHarness(t)
	r.f, r.index = restored, h.index
	if g := r.create(testSpec("gone")); g <= gen {
		t.Errorf("re-created after the restore at generation %d, want above %d", g, gen)
	}
}

// A snapshot whose audit trail is on (format 2) backs up and restores
// like any other: the trail comes back with the raised counter.
func TestBackupOfAnAuditedSnapshot(t *testing.T) {
	h := newAuditHarness(t, 10)
	h.mustOK(as("alice", nil, createCmd(testSpec("billing"))))
	data := persist(t, h.f)
	sum, err := fsm.InspectSnapshot(bytes.NewReader(data))
	if err != nil || sum.FormatVersion != 2 || sum.Jobs != 1 {
		t.Fatalf("InspectSnapshot: %+v, %v; want format 2 with the job", sum, err)
	}
	var orphaned bytes.Buffer
	if _, err := fsm.OrphanDispatched(&orphaned, bytes.NewReader(data)); err != nil {
		t.Fatalf("OrphanDispatched: %v", err)
	}
	r, _, err := fsm.WithCounterFloor(&orphaned, 1<<20)
	if err != nil {
		t.Fatalf("WithCounterFloor: %v", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	restored := fsm.New()
	if err := restore(restored, out); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	recs := restored.ListAudit(fsm.AuditQuery{Job: "billing"})
	if restored.FencingToken() != 1<<20 || len(recs) != 1 || recs[0].GetPrincipal() != "alice" {
		t.Fatalf("restored counter %d, trail %v; want the floor and alice's create", restored.FencingToken(), recs)
	}
}
