package fsm_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func progressCmd(records ...*pb.ProgressRecord) *pb.Command {
	return &pb.Command{Kind: &pb.Command_RecordProgress{RecordProgress: &pb.RecordProgressCommand{Records: records}}}
}

func leasedWorkerSpec(name string) *pb.JobSpec {
	spec := workerSpec(name)
	spec.Worker.Lease = durationpb.New(30 * time.Second)
	return spec
}

func pct(n uint32) *uint32 { return &n }

// progressOf is a record of run's current attempt.
func progressOf(run *pb.Run, p *uint32, msg string, at time.Time) *pb.ProgressRecord {
	return &pb.ProgressRecord{RunId: run.GetId(), Token: fsm.CurrentAttempt(run).GetToken(), Progress: p, Message: msg,
		AtUnixNano: at.UnixNano()}
}

// A report is recorded on the run's executing attempt, where every reader
// of the run sees it; a later one replaces it, one without a percentage
// keeps the last.
func TestProgressIsRecordedOnTheExecutingAttempt(t *testing.T) {
	h := newHarness(t)
	gen := h.create(workerSpec("billing"))
	run := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	rec := &recorder{}
	h.f.SetObserver(rec)

	at := h.now.Add(-time.Second)
	h.mustOK(progressCmd(progressOf(run, pct(40), "charging", at)))
	a := fsm.CurrentAttempt(h.run(run.GetId()))
	if a.Progress == nil || a.GetProgress() != 40 || a.GetProgressMessage() != "charging" || a.GetProgressAtUnixNano() != at.UnixNano() {
		t.Fatalf("attempt %v, want progress 40, \"charging\" at %d", a, at.UnixNano())
	}
	if o := rec.takeOrigins(); len(o) != 1 || o[0].Kind != fsm.KindRecordProgress {
		t.Fatalf("observer told %v, want one record_progress change", o)
	}

	h.mustOK(progressCmd(progressOf(run, nil, "almost", at.Add(time.Second))))
	if a := fsm.CurrentAttempt(h.run(run.GetId())); a.GetProgress() != 40 || a.GetProgressMessage() != "almost" {
		t.Fatalf("attempt %v, want progress 40 kept and the new message", a)
	}

	// The outcome keeps the last report beside it.
	done := h.finish(h.run(run.GetId()), stSucceeded, h.now)
	if a := fsm.CurrentAttempt(done); a.GetProgress() != 40 || a.GetProgressMessage() != "almost" {
		t.Fatalf("finished attempt %v, want its last progress kept", a)
	}
}

// Only the run's current attempt while it executes takes a report: one of
// a superseded token, of a finished run, of no run, or out of range
// changes nothing, and the entry as a whole still applies.
func TestProgressOfAnAttemptNoLongerCurrentChangesNothing(t *testing.T) {
	h := newHarness(t)
	gen := h.create(workerSpec("billing"))
	first := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	second := h.accepted(lostFire("billing", gen, first.GetRunId(), first.GetToken()))
	other := h.create(workerSpec("payroll"))
	finished := h.accepted(slotFire("payroll", other, h.nextSlot("payroll"))).GetRun()
	h.finish(finished, stFailed, h.now)
	before := h.f.StateHash()

	r := h.mustOK(progressCmd(
		&pb.ProgressRecord{RunId: first.GetRunId(), Token: first.GetToken(), Progress: pct(10)},
		progressOf(finished, pct(20), "late", h.now),
		&pb.ProgressRecord{RunId: "nobody-1", Token: second.GetToken(), Progress: pct(30)},
		progressOf(second.GetRun(), pct(101), "too far", h.now),
	))
	if r.GetChanged() || h.f.StateHash() != before {
		t.Fatalf("reports of attempts no longer current changed the state: %v", r)
	}
	h.mustOK(progressCmd(progressOf(second.GetRun(), pct(100), "", h.now)))
	if a := fsm.CurrentAttempt(h.run(second.GetRunId())); a.GetProgress() != 100 || a.GetToken() != second.GetToken() {
		t.Fatalf("attempt %v, want the re-dispatched attempt at 100", a)
	}
}

// A report travels in the log: every node that applies it holds it, and a
// snapshot carries it.
func TestProgressSurvivesASnapshot(t *testing.T) {
	h := newHarness(t)
	gen := h.create(workerSpec("billing"))
	run := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	h.mustOK(progressCmd(progressOf(run, pct(0), "starting", h.now)))

	other := fsm.New()
	if err := restore(other, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if other.StateHash() != h.f.StateHash() {
		t.Fatal("the restored state differs")
	}
	got, err := other.Run(run.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if a := fsm.CurrentAttempt(got); a.Progress == nil || a.GetProgress() != 0 || a.GetProgressMessage() != "starting" {
		t.Fatalf("restored attempt %v, want progress 0 and its message", a)
	}
}
