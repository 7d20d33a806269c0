package fsm_test

import (
	"bytes"
	"fmt"
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func manyLabels() map[string]string {
	l := map[string]string{"env": "", "team": "billing", "owner/name": "zoë ✓"}
	for i := range 20 {
		l[fmt.Sprintf("k%02d", i)] = fmt.Sprintf("v%d", i*i)
	}
	return l
}

// The FSM stores labels in wire form; every read that returns a job must
// give them back as the map they were written as.
func TestLabelsReadBackAsWritten(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("a")
	spec.Labels = manyLabels()
	if got := h.mustOK(createCmd(cloneSpec(spec))).GetJob().GetSpec().GetLabels(); !maps.Equal(got, spec.Labels) {
		t.Errorf("create result labels %v, want %v", got, spec.Labels)
	}
	if got := h.job("a").GetSpec().GetLabels(); !maps.Equal(got, spec.Labels) {
		t.Errorf("Job labels %v, want %v", got, spec.Labels)
	}
	jobs, _ := h.f.ListJobs(fsm.ListQuery{Labels: map[string]string{"env": "", "owner/name": "zoë ✓"}})
	if len(jobs) != 1 || !maps.Equal(jobs[0].GetSpec().GetLabels(), spec.Labels) {
		t.Errorf("ListJobs by labels = %v, want job a with its labels", jobs)
	}
	if !proto.Equal(h.job("a").GetSpec(), spec) {
		t.Errorf("Job spec %v, want %v", h.job("a").GetSpec(), spec)
	}

	// The same labels, however the map was built, are no change.
	same := cloneSpec(spec)
	same.Labels = maps.Clone(spec.Labels)
	if r := h.mustOK(updateCmd(same, 0)); r.GetChanged() {
		t.Error("a put with equal labels changed the job")
	}
	other := cloneSpec(spec)
	other.Labels["env"] = "prod"
	if r := h.mustOK(updateCmd(other, 0)); !r.GetChanged() || r.GetJob().GetSpec().GetLabels()["env"] != "prod" {
		t.Errorf("a put with a changed label: changed=%v labels %v", r.GetChanged(), r.GetJob().GetSpec().GetLabels())
	}
	if jobs, _ := h.f.ListJobs(fsm.ListQuery{Labels: map[string]string{"env": ""}}); len(jobs) != 0 {
		t.Errorf("ListJobs env=\"\" after the change = %d jobs, want none", len(jobs))
	}
	h.mustOK(pauseCmd("a", true, "note"))
	if got := h.job("a").GetSpec().GetLabels(); !maps.Equal(got, other.Labels) {
		t.Errorf("labels after pause %v, want %v", got, other.Labels)
	}
}

// A snapshot record is a plain protobuf Job: a decoder that knows nothing
// of the stored form reads the labels as the labels field.
func TestSnapshotRecordsCarryLabelsAsTheLabelsField(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("a")
	spec.Labels = manyLabels()
	h.create(spec)
	r := bytes.NewReader(persist(t, h.f))
	var hdr pb.SnapshotHeader
	var rec pb.SnapshotRecord
	if err := protodelim.UnmarshalFrom(r, &hdr); err != nil {
		t.Fatal(err)
	}
	if err := protodelim.UnmarshalFrom(r, &rec); err != nil {
		t.Fatal(err)
	}
	got := rec.GetJob().GetSpec()
	if !maps.Equal(got.GetLabels(), spec.Labels) || len(got.ProtoReflect().GetUnknown()) != 0 {
		t.Errorf("record labels %v unknown %x, want %v and no unknown fields", got.GetLabels(), got.ProtoReflect().GetUnknown(), spec.Labels)
	}
}

// Fields of a newer build, unknown here, are kept beside the labels and
// come back in reads and snapshots.
func TestUnknownSpecFieldsSurviveBesideLabels(t *testing.T) {
	var extra []byte
	extra = protowire.AppendTag(extra, 999, protowire.BytesType)
	extra = protowire.AppendString(extra, "from the future")
	spec := testSpec("a")
	spec.ProtoReflect().SetUnknown(extra)

	h := newHarness(t)
	h.create(spec)
	check := func(where string, got *pb.JobSpec) {
		t.Helper()
		if !maps.Equal(got.GetLabels(), spec.GetLabels()) || !bytes.Equal(got.ProtoReflect().GetUnknown(), extra) {
			t.Errorf("%s: labels %v unknown %x, want %v and %x", where, got.GetLabels(), got.ProtoReflect().GetUnknown(), spec.GetLabels(), extra)
		}
	}
	check("Job", h.job("a").GetSpec())
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	j, _ := restored.Job("a")
	check("Job after restore", j.GetSpec())
	if restored.StateHash() != h.f.StateHash() {
		t.Error("state hash differs after restore")
	}
}

// createAt applies creates of the named jobs, all proposed at the same
// instant.
func (h *harness) createAt(nanos int64, names ...string) {
	h.t.Helper()
	for _, name := range names {
		c := createCmd(testSpec(name))
		c.ProposedAtUnixNano = nanos
		data, err := proto.Marshal(c)
		if err != nil {
			h.t.Fatal(err)
		}
		if r := h.applyRaw(data); r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			h.t.Fatalf("create %s: %v", name, r)
		}
	}
}

// Jobs created in the same second may share one stored status; a fire of
// one of them must leave the others' statuses as they were.
func TestASharedStatusIsNeverChangedThroughAnotherJob(t *testing.T) {
	h := newHarness(t)
	h.now = h.now.Add(10 * time.Second)
	h.createAt(baseTime.UnixNano(), "a", "b", "c")
	ea, _ := h.f.StoredJob("a")
	eb, _ := h.f.StoredJob("b")
	if ea.Status != eb.Status {
		t.Fatal("jobs created in the same second hold separate statuses: nothing is shared to test")
	}
	want := h.status("b")
	if res := h.fireOne(slotFire("a", 1, baseTime.Unix()+60)); !res.GetAccepted() {
		t.Fatalf("fire a: %v", res)
	}
	if got := h.status("a"); got.GetLatestToken() == 0 || got.GetCursorUnix() != baseTime.Unix()+60 {
		t.Errorf("a after its fire: %v", got)
	}
	for _, name := range []string{"b", "c"} {
		if got := h.status(name); !proto.Equal(got, want) {
			t.Errorf("%s after a's fire: %v, want %v", name, got, want)
		}
	}
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if restored.StateHash() != h.f.StateHash() {
		t.Error("state hash differs after restore")
	}
}
