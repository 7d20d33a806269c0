package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// gate is one rule that cluster version 2 changed for a kind of version 1:
// run applies the same entries at either version and checks the decisions,
// those of release 0d365cb at version 1 (v2 false), the new ones at 2.
type gate struct {
	name string
	run  func(h *harness, v2 bool)
}

var gates = []gate{
	{"put_job.max_jobs", func(h *harness, v2 bool) {
		h.create(testSpec("mj-first"))
		limit := uint64(h.f.JobCount())
		cmd := createCmd(testSpec("mj-second"))
		cmd.GetPutJob().MaxJobs = limit
		r := h.apply(cmd)
		want := pb.ResultCode_RESULT_CODE_OK
		if v2 {
			want = pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED
		}
		if r.GetCode() != want {
			h.t.Errorf("create beyond max_jobs %d: %v (%s), want %v", limit, r.GetCode(), r.GetMessage(), want)
		}
	}},
	{"fire_batch.max_open_runs", func(h *harness, v2 bool) {
		gen := h.create(withOverlap(testSpec("mo"), pb.Overlap_OVERLAP_ALLOW))
		h.accepted(slotFire("mo", gen, h.nextSlot("mo")))
		res := h.fireLimited(1, slotFire("mo", gen, h.nextSlot("mo")), &pb.Fire{Job: "mo", Generation: gen, Kind: kindManual, RequestId: "t1"})
		switch {
		case !v2 && (!res[0].GetAccepted() || !res[1].GetAccepted()):
			h.t.Errorf("version 1 ignores max_open_runs: %v, want both accepted", res)
		case v2 && (res[0].GetReason() != fsm.ReasonOpenRunsLimit || res[1].GetReason() != fsm.ReasonOpenRunsLimit):
			h.t.Errorf("slot and trigger beyond max_open_runs: %v, want both %s", res, fsm.ReasonOpenRunsLimit)
		}
	}},
	{"manual fire of another generation", func(h *harness, v2 bool) {
		h.create(testSpec("mg"))
		r := h.fireOne(ofGeneration(manualFire("mg", "t1", false), 7))
		h.wantRefusal(r, v2, fsm.ReasonGeneration)
	}},
	{"retry fire of another generation", func(h *harness, v2 bool) {
		run := h.retrying("rg")
		r := h.fireOne(ofGeneration(retryFire("rg", run.GetId()), 7))
		h.wantRefusal(r, v2, fsm.ReasonGeneration)
	}},
	{"retarget cancels waiting retries", func(h *harness, v2 bool) {
		run := h.retrying("rt")
		h.retarget("rt", "http://billing.test/moved")
		got, want := h.run(run.GetId()), stRetrying
		if v2 {
			want = stCancelled
		}
		if got.GetState() != want {
			h.t.Errorf("waiting retry after a retarget: %v, want %v", got.GetState(), want)
		}
	}},
	{"failure after a retarget", func(h *harness, v2 bool) {
		gen := h.create(withRetry(testSpec("fr"), 3, time.Second, time.Minute))
		run := h.accepted(slotFire("fr", gen, h.nextSlot("fr"))).GetRun()
		h.retarget("fr", "http://billing.test/moved")
		got, want := h.finish(run, stFailed, h.now), stRetrying
		if v2 {
			want = stFailed
		}
		if got.GetState() != want {
			h.t.Errorf("failure of the old generation's run: %v, want %v", got.GetState(), want)
		}
	}},
	{"re-dispatch naming another generation", func(h *harness, v2 bool) {
		gen := h.create(testSpec("rd"))
		run := h.accepted(slotFire("rd", gen, h.nextSlot("rd"))).GetRun()
		r := h.fireAs(leaderID, leaderTerm+1, []*pb.Fire{ofGeneration(redispatchFire("rd", run.GetId()), 7)}, nil)[0]
		h.wantRefusal(r, v2, fsm.ReasonGeneration)
	}},
	{"re-dispatch after a retarget", func(h *harness, v2 bool) {
		gen := h.create(testSpec("ra"))
		run := h.accepted(slotFire("ra", gen, h.nextSlot("ra"))).GetRun()
		h.retarget("ra", "http://billing.test/moved")
		r := h.fireAs(leaderID, leaderTerm+1, []*pb.Fire{ofGeneration(redispatchFire("ra", run.GetId()), gen)}, nil)[0]
		h.wantRefusal(r, v2, fsm.ReasonGeneration)
		if got := h.run(run.GetId()); v2 && (got.GetState() != stUnknown || got.GetReason() != fsm.ReasonGeneration) {
			h.t.Errorf("orphan of the old generation: %v (%s), want UNKNOWN %s", got.GetState(), got.GetReason(), fsm.ReasonGeneration)
		}
	}},
	{"completion with a reason", func(h *harness, v2 bool) {
		gen := h.create(withRetry(testSpec("cr"), 3, time.Second, time.Minute))
		run := h.accepted(slotFire("cr", gen, h.nextSlot("cr"))).GetRun()
		c := done(run, stFailed, h.now)
		c.Reason = "exec_denied"
		got := h.complete(c)[0].GetRun()
		wantState, wantReason := stRetrying, ""
		if v2 {
			wantState, wantReason = stFailed, "exec_denied"
		}
		if got.GetState() != wantState || got.GetReason() != wantReason {
			h.t.Errorf("refused attempt: %v (reason %q), want %v (reason %q)", got.GetState(), got.GetReason(), wantState, wantReason)
		}
	}},
	{"retry backoffs the spec does not set", func(h *harness, v2 bool) {
		gen := h.create(withRetry(testSpec("bo"), 3, 0, 0))
		run := h.accepted(slotFire("bo", gen, h.nextSlot("bo"))).GetRun()
		finished := h.now
		got := h.finish(run, stFailed, finished)
		want := finished.Add(time.Second) // version 1's implicit initial backoff
		if v2 {
			want = finished // a stored zero is zero
		}
		if got.GetNextAttemptAtUnixNano() != want.UnixNano() {
			h.t.Errorf("next attempt at %v, want %v", time.Unix(0, got.GetNextAttemptAtUnixNano()).UTC(), want)
		}
	}},
	{"history_limit 0", func(h *harness, v2 bool) {
		spec := testSpec("hl")
		spec.HistoryLimit = 0
		h.missRuns("hl", h.create(spec), 12)
		want := 10 // version 1's implicit limit
		if v2 {
			want = 0
		}
		if got := len(h.f.ListRuns("hl", 100)); got != want {
			h.t.Errorf("history_limit 0 keeps %d runs, want %d", got, want)
		}
	}},
	{"history of a deleted name", func(h *harness, v2 bool) {
		spec := testSpec("dh")
		spec.HistoryLimit = 20
		h.missRuns("dh", h.create(spec), 12)
		h.mustOK(deleteCmd("dh", 0))
		want := 10 // version 1 prunes a name without a job to 10
		if v2 {
			want = 12
		}
		if got := len(h.f.ListRuns("dh", 100)); got != want {
			h.t.Errorf("a deleted name keeps %d runs, want %d", got, want)
		}
	}},
	{"tombstone collection", func(h *harness, v2 bool) {
		spec := testSpec("tc")
		h.create(spec)
		h.retarget("tc", "http://billing.test/moved") // generation 2
		h.mustOK(deleteCmd("tc", 0))
		// Version 2 collected the tombstone into the retired generation,
		// above which every fresh name starts; version 1 keeps tombstones.
		gen := h.create(testSpec("tc-fresh"))
		if want := map[bool]uint64{false: 1, true: 3}[v2]; gen != want {
			h.t.Errorf("a fresh name after a collected tombstone starts at generation %d, want %d", gen, want)
		}
	}},
	{"a changed worker target", func(h *harness, v2 bool) {
		spec := workerSpec("wt")
		gen := h.create(spec)
		spec = cloneSpec(spec)
		spec.Worker.Pool = "other"
		got := h.mustOK(updateCmd(spec, 0)).GetJob().GetGeneration()
		if want := map[bool]uint64{false: gen, true: gen + 1}[v2]; got != want {
			h.t.Errorf("generation after a pool change %d, want %d", got, want)
		}
	}},
	{"re-dispatch of a lost attempt", func(h *harness, v2 bool) {
		gen := h.create(workerSpec("wl"))
		first := h.accepted(slotFire("wl", gen, h.nextSlot("wl")))
		r := h.fireOne(lostFire("wl", gen, first.GetRunId(), first.GetToken()))
		switch {
		case !v2 && r.GetReason() != fsm.ReasonNotOrphan:
			h.t.Errorf("version 1: %v, want refused %s (an attempt of this term)", r, fsm.ReasonNotOrphan)
		case v2 && !r.GetAccepted():
			h.t.Errorf("version 2: %v, want the lost attempt re-dispatched", r)
		}
	}},
	{"updated_by", func(h *harness, v2 bool) {
		cmd := createCmd(testSpec("ub"))
		cmd.Caller = &pb.Caller{Principal: "alice"}
		got := h.mustOK(cmd).GetJob().GetUpdatedBy()
		if want := map[bool]string{false: "", true: "alice"}[v2]; got != want {
			h.t.Errorf("updated_by %q, want %q", got, want)
		}
	}},
}

func TestGatesApplyByClusterVersion(t *testing.T) {
	for _, g := range gates {
		t.Run(g.name, func(t *testing.T) {
			t.Run("version 1", func(t *testing.T) { g.run(newHarnessAt(t, 1), false) })
			t.Run("version 2", func(t *testing.T) { g.run(newHarnessAt(t, 2), true) })
		})
	}
}

// retrying creates a job with a retry policy and returns its first run,
// failed and waiting for its retry.
func (h *harness) retrying(name string) *pb.Run {
	h.t.Helper()
	gen := h.create(withRetry(testSpec(name), 3, time.Second, time.Minute))
	run := h.accepted(slotFire(name, gen, h.nextSlot(name))).GetRun()
	return h.finish(run, stFailed, h.now)
}

// fireLimited applies one batch with max_open_runs set.
func (h *harness) fireLimited(maxOpen uint32, fires ...*pb.Fire) []*pb.FireResult {
	h.t.Helper()
	cmd := fireBatchCmd(leaderID, leaderTerm, fires, nil)
	cmd.GetFireBatch().MaxOpenRuns = maxOpen
	return h.mustOK(cmd).GetFires()
}

// missRuns records n single-slot misses of name, one MISSED run each.
func (h *harness) missRuns(name string, gen uint64, n int) {
	h.t.Helper()
	from := h.nextSlot(name)
	misses := make([]*pb.Miss, n)
	for i := range misses {
		slot := from + int64(i)*60
		misses[i] = &pb.Miss{Job: name, Generation: gen, FromSlotUnix: slot, ToSlotUnix: slot, Count: 1, Reason: "catchup_window"}
	}
	h.fireAs(leaderID, leaderTerm, nil, misses)
}

// wantRefusal checks a fire that version 1 accepts and version 2 refuses.
func (h *harness) wantRefusal(r *pb.FireResult, v2 bool, reason string) {
	h.t.Helper()
	switch {
	case !v2 && !r.GetAccepted():
		h.t.Errorf("version 1: %v, want accepted", r)
	case v2 && (r.GetAccepted() || r.GetReason() != reason):
		h.t.Errorf("version 2: %v, want refused %s", r, reason)
	}
}

func TestClusterVersionStartsAtOneAndNeverGoesBack(t *testing.T) {
	h := newHarnessAt(t, 1)
	if v := h.f.ClusterVersion(); v != 1 {
		t.Fatalf("a new FSM is at cluster version %d, want 1", v)
	}
	if r := h.mustOK(fsm.SetClusterVersion(2)); !r.GetChanged() || h.f.ClusterVersion() != 2 {
		t.Fatalf("raise to 2: %v, version %d", r, h.f.ClusterVersion())
	}
	before := h.f.StateHash()
	for _, v := range []uint32{2, 1} {
		if r := h.mustOK(fsm.SetClusterVersion(v)); r.GetChanged() {
			t.Errorf("set_cluster_version %d at version 2 reports a change", v)
		}
	}
	if h.f.ClusterVersion() != 2 || h.f.StateHash() != before {
		t.Errorf("a lower or equal version moved the state: version %d", h.f.ClusterVersion())
	}
	h.mustFail(fsm.SetClusterVersion(0), pb.ResultCode_RESULT_CODE_MALFORMED, fsm.ErrMalformed)
}

func TestRaiseIsPartOfTheState(t *testing.T) {
	a, b := newHarnessAt(t, 1), newHarnessAt(t, 1)
	a.create(testSpec("same"))
	b.create(testSpec("same"))
	if a.f.StateHash() != b.f.StateHash() {
		t.Fatal("equal logs, different hashes")
	}
	a.mustOK(fsm.SetClusterVersion(2))
	if a.f.StateHash() == b.f.StateHash() {
		t.Error("raising the cluster version left the state hash as it was")
	}
}

// A set_cluster_version beyond this build halts the node like an unknown
// kind: applying the entry with older rules would diverge from the peers.
func TestVersionBeyondThisBuildHalts(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("kept"))
	before, index := h.f.StateHash(), h.f.AppliedIndex()
	data, err := proto.Marshal(fsm.SetClusterVersion(fsm.CommandVersion + 1))
	if err != nil {
		t.Fatal(err)
	}
	out := h.f.Apply(&raft.Log{Index: index + 1, Term: 1, Type: raft.LogCommand, Data: data})
	if err, ok := out.(error); !ok || !errors.Is(err, fsm.ErrVersionTooNew) {
		t.Fatalf("Apply = %T(%v), want an error wrapping ErrVersionTooNew", out, out)
	}
	if h.f.StateHash() != before || h.f.AppliedIndex() != index || h.f.ClusterVersion() != fsm.CommandVersion {
		t.Error("the entry this build cannot apply changed the state")
	}
}

func TestRaiseRestatesWhatVersionOneImplied(t *testing.T) {
	h := newHarnessAt(t, 1)
	spec := withRetry(testSpec("implicit"), 3, 0, 0)
	spec.HistoryLimit = 0
	gen := h.create(spec)
	explicit := h.job(h.createAndName(withRetry(testSpec("explicit"), 3, 2*time.Second, 10*time.Second)))
	before := h.job("implicit")

	h.mustOK(fsm.SetClusterVersion(2))
	after := h.job("implicit")
	r := after.GetSpec().GetRetry()
	if r.GetInitialBackoff().AsDuration() != time.Second || r.GetMaxBackoff().AsDuration() != time.Minute ||
		after.GetSpec().GetHistoryLimit() != 10 || r.GetMaxAttempts() != 3 {
		t.Errorf("after the raise the spec holds retry %v, history_limit %d; want 1s/1m, 3 attempts, 10",
			r, after.GetSpec().GetHistoryLimit())
	}
	if after.GetVersion() != before.GetVersion() || after.GetGeneration() != gen ||
		after.GetModifyIndex() != before.GetModifyIndex() {
		t.Errorf("the raise changed the job's identity: %v, was %v", after, before)
	}
	if got := h.job("explicit"); got.GetSpec().GetRetry().GetInitialBackoff().AsDuration() != 2*time.Second ||
		got.GetSpec().GetRetry().GetMaxBackoff().AsDuration() != 10*time.Second || got.GetVersion() != explicit.GetVersion() {
		t.Errorf("a spec that set its backoffs changed: %v", got.GetSpec().GetRetry())
	}
	// And the job retries as it did before the raise.
	run := h.accepted(slotFire("implicit", gen, h.nextSlot("implicit"))).GetRun()
	finished := h.now
	if got := h.finish(run, stFailed, finished); got.GetNextAttemptAtUnixNano() != finished.Add(time.Second).UnixNano() {
		t.Errorf("after the raise the retry waits until %v, want %v", time.Unix(0, got.GetNextAttemptAtUnixNano()).UTC(), finished.Add(time.Second))
	}
}

func (h *harness) createAndName(spec *pb.JobSpec) string {
	h.t.Helper()
	h.create(spec)
	return spec.GetName()
}

// A run left waiting for a retry at version 1 across a retarget is closed
// by its next retry fire once version 2 is active.
func TestRetryOfAnEarlierGenerationAfterTheRaise(t *testing.T) {
	h := newHarnessAt(t, 1)
	run := h.retrying("across")
	h.retarget("across", "http://billing.test/moved")
	if got := h.run(run.GetId()); got.GetState() != stRetrying {
		t.Fatalf("version 1 left %v, want RETRYING", got.GetState())
	}
	h.mustOK(fsm.SetClusterVersion(2))
	r := h.fireOne(retryFire("across", run.GetId()))
	if r.GetAccepted() || r.GetReason() != fsm.ReasonGeneration || r.GetRun().GetState() != stCancelled {
		t.Errorf("retry of the earlier generation: %v, want refused %s with the run CANCELLED", r, fsm.ReasonGeneration)
	}
}

func TestSnapshotCarriesTheClusterVersion(t *testing.T) {
	h := newHarnessAt(t, 1)
	h.create(testSpec("snap"))
	if v := snapshotHeader(t, h.f).GetClusterVersion(); v != 0 {
		t.Errorf("a version-1 snapshot records cluster_version %d, want none (as builds before versions wrote it)", v)
	}
	h.mustOK(fsm.SetClusterVersion(2))
	data := persist(t, h.f)
	if v := snapshotHeader(t, h.f).GetClusterVersion(); v != 2 {
		t.Errorf("snapshot header cluster_version %d, want 2", v)
	}
	f := fsm.New()
	if err := restore(f, data); err != nil {
		t.Fatal(err)
	}
	if f.ClusterVersion() != 2 || f.StateHash() != h.f.StateHash() {
		t.Errorf("restored version %d (hash equal: %v), want 2 and the same state", f.ClusterVersion(), f.StateHash() == h.f.StateHash())
	}
}

func TestSnapshotOfANewerClusterIsRefused(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("newer"))
	var buf bytes.Buffer
	if _, err := protodelim.MarshalTo(&buf, &pb.SnapshotHeader{FormatVersion: 1, ClusterVersion: fsm.CommandVersion + 1}); err != nil {
		t.Fatal(err)
	}
	before := h.f.StateHash()
	err := restore(h.f, buf.Bytes())
	if !errors.Is(err, fsm.ErrVersionTooNew) {
		t.Fatalf("Restore = %v, want ErrVersionTooNew", err)
	}
	if h.f.StateHash() != before {
		t.Error("a refused restore changed the state")
	}
}

// updateRelease rewrites testdata/release-0d365cb/log.bin from the gates;
// snapshot.bin must then be made again with that release (README.md there).
var updateRelease = flag.Bool("update-release-log", false, "rewrite testdata/release-0d365cb/log.bin")

// Every gate's entries, applied at cluster version 1, leave exactly the
// state that release 0d365cb's state machine reaches from the same log:
// snapshot.bin is that release's snapshot of it, byte for byte. This is
// what lets old and new nodes share a log during a rolling upgrade.
func TestVersion1AppliesAsRelease0d365cb(t *testing.T) {
	h := newHarnessAt(t, 1)
	for _, g := range gates {
		g.run(h, false)
	}
	dir := filepath.Join("testdata", "release-0d365cb")
	log := encodeLog(h.log)
	if *updateRelease {
		if err := os.WriteFile(filepath.Join(dir, "log.bin"), log, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s/log.bin: make snapshot.bin again with release 0d365cb (%s/README.md)", dir, dir)
	}
	want, err := os.ReadFile(filepath.Join(dir, "log.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(log, want) {
		t.Fatalf("the gates' log differs from %s/log.bin: run with -update-release-log and remake snapshot.bin (%s/README.md)", dir, dir)
	}
	released, err := os.ReadFile(filepath.Join(dir, "snapshot.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if got := persist(t, h.f); !bytes.Equal(got, released) {
		old := fsm.New()
		if err := restore(old, released); err != nil {
			t.Fatalf("release 0d365cb's snapshot: %v", err)
		}
		t.Errorf("at cluster version 1 the log leaves another state than release 0d365cb (%d bytes vs %d)", len(got), len(released))
		diffStates(t, h.f, old)
	}
}

// encodeLog is the form replay.go reads: index, term and data length as
// uvarints, then the data, per entry.
func encodeLog(entries []raft.Log) []byte {
	var b []byte
	for _, l := range entries {
		b = binary.AppendUvarint(b, l.Index)
		b = binary.AppendUvarint(b, l.Term)
		b = binary.AppendUvarint(b, uint64(len(l.Data)))
		b = append(b, l.Data...)
	}
	return b
}

// diffStates names the jobs and runs on which two states differ.
func diffStates(t *testing.T, got, want *fsm.FSM) {
	t.Helper()
	items := func(f *fsm.FSM) map[string]proto.Message {
		out := map[string]proto.Message{}
		js, _ := f.ListJobs(fsm.ListQuery{})
		for _, j := range js {
			out["job "+j.GetSpec().GetName()] = j
		}
		for _, r := range f.ListRuns("", 0) {
			out["run "+r.GetId()] = r
		}
		return out
	}
	g, w := items(got), items(want)
	for k, m := range g {
		if !proto.Equal(m, w[k]) {
			t.Errorf("%s: this build has\n%v\nrelease 0d365cb has\n%v", k, prototext.Format(m), prototext.Format(w[k]))
		}
	}
	for k := range w {
		if _, ok := g[k]; !ok {
			t.Errorf("%s: only release 0d365cb has it", k)
		}
	}
}
