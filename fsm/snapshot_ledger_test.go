package fsm_test

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// busyLedger returns a harness whose ledger has every kind of run: open,
// retrying, buffered, finished and pruned history, and an open run of a
// deleted job.
func busyLedger(t *testing.T) *harness {
	h := newHarness(t)
	spec := withRetry(testSpec("retry"), 3, time.Minute, time.Hour)
	spec.HistoryLimit = 2
	h.create(spec)
	h.create(withOverlap(testSpec("buffer"), pb.Overlap_OVERLAP_BUFFER_ONE))
	h.create(testSpec("doomed"))
	for range 4 {
		h.finish(h.accepted(slotFire("retry", 1, h.nextSlot("retry"))).GetRun(), stSucceeded, h.now)
	}
	h.finish(h.accepted(slotFire("retry", 1, h.nextSlot("retry"))).GetRun(), stFailed, h.now) // RETRYING
	h.accepted(slotFire("buffer", 1, h.nextSlot("buffer")))
	h.fireOne(slotFire("buffer", 1, h.nextSlot("buffer"))) // buffered
	h.accepted(slotFire("doomed", 1, h.nextSlot("doomed")))
	h.mustOK(deleteCmd("doomed", 0))
	return h
}

func TestSnapshotRoundTripCarriesTheLedger(t *testing.T) {
	h := busyLedger(t)
	r := newHarness(t)
	if err := restore(r.f, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	r.index, r.now = h.index, h.now
	if r.f.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hash differs")
	}
	for _, name := range []string{"retry", "buffer"} {
		if got, want := r.job(name), h.job(name); !proto.Equal(got, want) {
			t.Fatalf("restored job %s = %v, want %v", name, got, want)
		}
	}
	if h.status("buffer").GetBufferedSlotUnix() == 0 {
		t.Fatal("setup: nothing buffered")
	}
	equalRuns := func(what string, a, b []*pb.Run) {
		t.Helper()
		if len(a) != len(b) {
			t.Fatalf("%s: %d runs vs %d", what, len(a), len(b))
		}
		for i := range a {
			if !proto.Equal(a[i], b[i]) {
				t.Fatalf("%s: run %d differs: %v vs %v", what, i, a[i], b[i])
			}
		}
	}
	equalRuns("OpenRuns", r.f.OpenRuns(), h.f.OpenRuns())
	equalRuns("ListRuns", r.f.ListRuns("", 0), h.f.ListRuns("", 0))
	equalRuns("ListRuns(retry)", r.f.ListRuns("retry", 0), h.f.ListRuns("retry", 0))

	// The rebuilt indexes behave as the live ones: the same entries prune,
	// retry and finish the same runs.
	for _, x := range []*harness{h, r} {
		run := x.run(x.status("retry").GetOpenRunIds()[0])
		x.now = time.Unix(0, run.GetNextAttemptAtUnixNano())
		x.finish(x.accepted(retryFire("retry", run.GetId())).GetRun(), stSucceeded, x.now)
		x.finishOpen("buffer")
		x.accepted(slotFire("buffer", 1, x.status("buffer").GetBufferedSlotUnix()))
		for _, o := range x.f.OpenRuns() {
			if o.GetJob() == "doomed" { // its job is deleted: finished without retry
				x.finish(o, stFailed, x.now)
			}
		}
	}
	if r.f.StateHash() != h.f.StateHash() {
		t.Fatal("restored FSM diverged on the same later entries")
	}
	if got := len(r.f.ListRuns("retry", 0)); got != 2 {
		t.Fatalf("retry keeps %d runs, want its history limit 2", got)
	}
}

func TestSnapshotHeaderCountsRuns(t *testing.T) {
	h := busyLedger(t)
	data := persist(t, h.f)
	runs := len(h.f.ListRuns("", 0))
	var hdr pb.SnapshotHeader
	if err := readHeader(data, &hdr); err != nil {
		t.Fatalf("header: %v", err)
	}
	if hdr.GetRunCount() != uint64(runs) || hdr.GetFencingCounter() != h.f.FencingToken() {
		t.Fatalf("header %v, want run_count %d and counter %d", &hdr, runs, h.f.FencingToken())
	}
}

func runRecord(r *pb.Run) *pb.SnapshotRecord {
	return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Run{Run: r}}
}

func openRun(id, job string, token uint64) *pb.Run {
	return &pb.Run{Id: id, Job: job, State: stDispatched, Attempts: []*pb.Attempt{{Number: 1, Token: token, State: stDispatched}}}
}

func jobWithOpen(name string, open ...string) *pb.SnapshotRecord {
	rec := jobRecord(name, 1)
	rec.GetJob().Status = &pb.JobStatus{OpenRunIds: open}
	return rec
}

func ledgerHeader(counter, jobs, runs uint64) *pb.SnapshotHeader {
	return &pb.SnapshotHeader{FormatVersion: 1, FencingCounter: counter, JobCount: jobs, RunCount: runs}
}

func TestRestoreRejectsInconsistentLedger(t *testing.T) {
	finished := &pb.Run{Id: "a-1", Job: "a", State: stSucceeded}
	cases := []struct {
		name    string
		msgs    []proto.Message
		mention string
	}{
		{"runs out of order", []proto.Message{ledgerHeader(5, 0, 2), runRecord(openRun("b-2", "b", 2)), runRecord(openRun("a-1", "a", 1))}, "order"},
		{"run without id", []proto.Message{ledgerHeader(5, 0, 1), runRecord(&pb.Run{Job: "a"})}, "no id"},
		{"open run without attempt", []proto.Message{ledgerHeader(5, 0, 1), runRecord(&pb.Run{Id: "a-1", Job: "a", State: stRetrying})}, "no attempt"},
		{"token above the counter", []proto.Message{ledgerHeader(1, 0, 1), runRecord(openRun("a-2", "a", 2))}, "above the fencing counter"},
		{"latest token above the counter", []proto.Message{ledgerHeader(1, 1, 0), func() proto.Message {
			r := jobWithOpen("a")
			r.GetJob().Status.LatestToken = 2
			return r
		}()}, "above the fencing counter"},
		{"open id of a missing run", []proto.Message{ledgerHeader(5, 1, 0), jobWithOpen("a", "a-1")}, "not in the snapshot"},
		{"open id of a finished run", []proto.Message{ledgerHeader(5, 1, 1), jobWithOpen("a", "a-1"), runRecord(finished)}, "as open"},
		{"open id of another job's run", []proto.Message{ledgerHeader(5, 2, 1), jobWithOpen("a", "b-1"), jobWithOpen("b"), runRecord(openRun("b-1", "b", 1))}, "of job"},
		{"open id twice", []proto.Message{ledgerHeader(5, 1, 1), jobWithOpen("a", "a-1", "a-1"), runRecord(openRun("a-1", "a", 1))}, "twice"},
		{"job among runs", []proto.Message{ledgerHeader(5, 0, 1), jobRecord("a", 1)}, "not a run"},
		{"missing run", []proto.Message{ledgerHeader(5, 0, 1)}, "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := busyLedger(t)
			refusesRestore(t, h.f, stream(t, tc.msgs...), tc.mention)
		})
	}
	// The same records, made consistent, restore.
	ok := stream(t, ledgerHeader(5, 2, 2), jobWithOpen("a", "a-1"), jobWithOpen("b"), runRecord(openRun("a-1", "a", 1)), runRecord(&pb.Run{Id: "b-2", Job: "b", State: stSucceeded}))
	f := fsm.New()
	if err := restore(f, ok); err != nil {
		t.Fatalf("Restore of a consistent ledger: %v", err)
	}
	if open := f.OpenRuns(); len(open) != 1 || open[0].GetId() != "a-1" {
		t.Fatalf("OpenRuns after restore = %v, want [a-1]", ids(open))
	}
}

func readHeader(data []byte, h *pb.SnapshotHeader) error {
	return protodelim.UnmarshalFrom(bufio.NewReader(bytes.NewReader(data)), h)
}
