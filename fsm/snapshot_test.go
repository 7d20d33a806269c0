package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// stream builds a snapshot stream by hand, for states no command sequence
// can reach (a non-zero counter) and for corrupt snapshots.
func stream(t *testing.T, msgs ...proto.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, m := range msgs {
		if _, err := protodelim.MarshalTo(&buf, m); err != nil {
			t.Fatalf("marshal record: %v", err)
		}
	}
	return buf.Bytes()
}

func header(counter, jobs, tombstones uint64) *pb.SnapshotHeader {
	return &pb.SnapshotHeader{FormatVersion: 1, FencingCounter: counter, JobCount: jobs, TombstoneCount: tombstones}
}

func jobRecord(name string, generation uint64) *pb.SnapshotRecord {
	j := &pb.Job{Spec: testSpec(name), Generation: generation, Version: 1, ModifyIndex: generation}
	return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Job{Job: j}}
}

func tombstoneRecord(name string, generation uint64) *pb.SnapshotRecord {
	return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Tombstone{Tombstone: &pb.Tombstone{Name: name, Generation: generation}}}
}

// populated returns a harness holding live jobs, one paused, and tombstones.
func populated(t *testing.T) *harness {
	h := newHarness(t)
	for _, name := range []string{"delta", "alpha", "charlie", "bravo", "echo"} {
		h.mustOK(createCmd(testSpec(name)))
	}
	spec := testSpec("bravo")
	spec.Schedule = "@daily"
	h.mustOK(updateCmd(spec, 0))
	h.mustOK(pauseCmd("charlie", true, "incident"))
	h.mustOK(deleteCmd("bravo", 0))
	h.mustOK(deleteCmd("echo", 0))
	return h
}

func TestSnapshotRoundTrip(t *testing.T) {
	h := populated(t)
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if restored.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hash differs")
	}
	for _, name := range []string{"alpha", "charlie", "delta"} {
		want := h.job(name)
		got, err := restored.Job(name)
		if err != nil || !proto.Equal(got, want) {
			t.Fatalf("restored Job(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	if restored.AppliedIndex() != h.f.AppliedIndex()-2 {
		// The two deletes are the last entries and leave no modify_index.
		t.Fatalf("restored AppliedIndex %d, want the highest modify_index %d", restored.AppliedIndex(), h.f.AppliedIndex()-2)
	}

	// The tombstones came along: re-creating continues the generations.
	r := newHarness(t)
	r.f, r.index = restored, h.index
	if g := r.mustOK(createCmd(testSpec("bravo"))).GetJob().GetGeneration(); g != 3 {
		t.Fatalf("re-created bravo after restore at generation %d, want 3", g)
	}
	// echo's tombstone was collected at once: it starts above the highest
	// generation retired, bravo's 2.
	if g := r.mustOK(createCmd(testSpec("echo"))).GetJob().GetGeneration(); g != 3 {
		t.Fatalf("re-created echo after restore at generation %d, want 3", g)
	}
}

func TestSnapshotCarriesTheFencingCounter(t *testing.T) {
	f := fsm.New()
	data := stream(t, header(42, 1, 1), jobRecord("alpha", 3), tombstoneRecord("beta", 7))
	if err := restore(f, data); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if f.FencingToken() != 42 || f.JobCount() != 1 {
		t.Fatalf("FencingToken %d JobCount %d, want 42 and 1", f.FencingToken(), f.JobCount())
	}
	again := fsm.New()
	if err := restore(again, persist(t, f)); err != nil {
		t.Fatalf("Restore of a re-persisted snapshot: %v", err)
	}
	if again.FencingToken() != 42 || again.StateHash() != f.StateHash() {
		t.Fatalf("counter %d after a second round trip, want 42 and an equal hash", again.FencingToken())
	}
	counterOnly := fsm.New()
	if err := restore(counterOnly, stream(t, header(1, 0, 0))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if counterOnly.StateHash() == fsm.New().StateHash() {
		t.Fatal("the counter is not part of the state hash")
	}
}

func TestPersistIsDeterministic(t *testing.T) {
	h := populated(t)
	if a, b := persist(t, h.f), persist(t, h.f); !bytes.Equal(a, b) {
		t.Fatal("two snapshots of the same state differ")
	}
}

func TestSnapshotIsUnaffectedByLaterApplies(t *testing.T) {
	h := populated(t)
	want := h.f.StateHash()
	snap, err := h.f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()

	// Change every part of the state after the capture.
	h.mustOK(deleteCmd("alpha", 0))
	h.mustOK(pauseCmd("delta", true, "later"))
	h.mustOK(createCmd(testSpec("bravo")))
	for i := range 200 { // enough inserts to split and copy tree nodes
		h.mustOK(createCmd(testSpec(fmt.Sprintf("later-%03d", i))))
	}

	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	restored := fsm.New()
	if err := restore(restored, sink.Bytes()); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if restored.StateHash() != want {
		t.Fatal("the snapshot saw changes applied after it was taken")
	}
}

func TestRestoreDiscardsEarlierState(t *testing.T) {
	h := populated(t)
	data := stream(t, header(5, 1, 1), jobRecord("zulu", 2), tombstoneRecord("yankee", 4))
	if err := restore(h.f, data); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if jobs, _ := h.f.ListJobs(fsm.ListQuery{}); len(jobs) != 1 || jobs[0].GetSpec().GetName() != "zulu" {
		t.Fatalf("jobs after restore: %v, want only zulu", jobs)
	}
	// bravo's tombstone (generation 2) is gone: bravo starts afresh.
	if g := h.mustOK(createCmd(testSpec("bravo"))).GetJob().GetGeneration(); g != 1 {
		t.Fatalf("bravo re-created at generation %d, want 1: the old tombstone survived the restore", g)
	}
	if g := h.mustOK(createCmd(testSpec("yankee"))).GetJob().GetGeneration(); g != 5 {
		t.Fatalf("yankee created at generation %d, want 5 from the restored tombstone", g)
	}
}

func TestTruncatedSnapshotFailsAndKeepsState(t *testing.T) {
	data := persist(t, populated(t).f)
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("keep")))
	want := h.f.StateHash()
	for n := range len(data) {
		err := restore(h.f, data[:n])
		if err == nil {
			t.Fatalf("restore of the first %d of %d bytes succeeded", n, len(data))
		}
		if h.f.StateHash() != want {
			t.Fatalf("failed restore of %d bytes changed the state (%v)", n, err)
		}
	}
	if err := restore(h.f, data[:len(data)-1]); !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %q does not say the snapshot is truncated", err)
	}
}

func TestRestoreRejectsUnknownFormatVersion(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("keep")))
	want := h.f.StateHash()
	data := stream(t, &pb.SnapshotHeader{FormatVersion: 3})
	err := restore(h.f, data)
	if !errors.Is(err, fsm.ErrSnapshotFormat) || !strings.Contains(err.Error(), "format version 3") {
		t.Fatalf("Restore of format version 3: %v, want ErrSnapshotFormat naming the version", err)
	}
	if h.f.StateHash() != want {
		t.Fatal("rejected restore changed the state")
	}
}

func TestRestoreRejectsCorruptStreams(t *testing.T) {
	noSpec := &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Job{Job: &pb.Job{Generation: 1}}}
	cases := []struct {
		name    string
		msgs    []proto.Message
		mention string
	}{
		{"trailing record", []proto.Message{header(0, 1, 0), jobRecord("a", 1), jobRecord("b", 1)}, "data after"},
		{"jobs out of order", []proto.Message{header(0, 2, 0), jobRecord("b", 1), jobRecord("a", 1)}, "order"},
		{"duplicate job", []proto.Message{header(0, 2, 0), jobRecord("a", 1), jobRecord("a", 2)}, "order"},
		{"tombstone among jobs", []proto.Message{header(0, 1, 1), tombstoneRecord("a", 1), jobRecord("b", 1)}, "not a job"},
		{"job among tombstones", []proto.Message{header(0, 0, 1), jobRecord("a", 1)}, "not a tombstone"},
		{"job without spec", []proto.Message{header(0, 1, 0), noSpec}, "no spec name"},
		{"tombstone of a live job", []proto.Message{header(0, 1, 1), jobRecord("a", 1), tombstoneRecord("a", 1)}, "live job"},
		{"tombstones out of order", []proto.Message{header(0, 0, 2), tombstoneRecord("b", 1), tombstoneRecord("a", 1)}, "order"},
		{"empty stream", nil, "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(createCmd(testSpec("keep")))
			refusesRestore(t, h.f, stream(t, tc.msgs...), tc.mention)
		})
	}
}

func TestRestoreRejectsOversizedRecord(t *testing.T) {
	// A length prefix of 1 GiB, then nothing: refused before any allocation.
	data := append(stream(t, header(0, 1, 0)), 0x80, 0x80, 0x80, 0x80, 0x04)
	err := restore(fsm.New(), data)
	var tooLarge *protodelim.SizeTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("Restore: %v, want a SizeTooLargeError", err)
	}
}

func TestPersistCancelsSinkOnWriteError(t *testing.T) {
	h := populated(t)
	snap, err := h.f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	sink := &memSink{failAfter: 1}
	err = snap.Persist(sink)
	if !errors.Is(err, errSinkFull) {
		t.Fatalf("Persist: %v, want the sink's error", err)
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("sink cancelled=%v closed=%v, want cancelled only", sink.cancelled, sink.closed)
	}
}
