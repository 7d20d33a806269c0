package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestJitterDelaysDispatchNotTheSlot: each slot is dispatched once its
// jitter has passed, never before, as a scheduled (on time) run whose
// scheduled_at is the nominal slot and whose run records the delay.
func TestJitterDelaysDispatchNotTheSlot(t *testing.T) {
	h := newHarness(t)
	s := spec("spread", "@every 10s")
	s.Jitter = durationpb.New(8 * time.Second)
	h.putJob(s)
	h.lead()
	h.step(60 * time.Second)
	runs := h.runs("spread")
	if len(runs) < 4 {
		t.Fatalf("%d runs in a minute of @every 10s, want most slots fired", len(runs))
	}
	delayed := 0
	for _, r := range runs {
		slot := time.Unix(r.GetSlotUnix(), 0)
		want := schedule.Jitter("spread", slot, 8*time.Second)
		a := fsm.CurrentAttempt(r)
		switch {
		case r.GetSlotUnix()%10 != 0 || r.GetKind() != pb.FireKind_FIRE_KIND_SCHEDULED:
			t.Errorf("run %v: want a scheduled run at a nominal slot", r)
		case time.Duration(r.GetJitterMs())*time.Millisecond != want:
			t.Errorf("slot %v: jitter %d ms recorded, want %v", slot, r.GetJitterMs(), want)
		case time.Unix(0, a.GetDispatchedAtUnixNano()).Before(slot.Add(want)):
			t.Errorf("slot %v dispatched at %v, before its jitter %v passed", slot, time.Unix(0, a.GetDispatchedAtUnixNano()), want)
		}
		if want >= time.Second {
			delayed++
		}
	}
	if delayed == 0 {
		t.Fatal("no slot got a jitter of a second or more: the test shows nothing")
	}
	for _, a := range h.exec.startedOf("spread") {
		if a.ScheduledAt.Unix()%10 != 0 || !strings.HasSuffix(a.IdempotencyKey(), a.ScheduledAt.UTC().Format(time.RFC3339)) {
			t.Errorf("attempt scheduled at %v with key %s, want the nominal slot", a.ScheduledAt, a.IdempotencyKey())
		}
	}
}

// TestZeroJitterCostsNothing: a jitter of 0s plans exactly as no jitter,
// with no allocation more.
func TestZeroJitterCostsNothing(t *testing.T) {
	plain := spec("job", "@every 1s")
	zero := spec("job", "@every 1s")
	zero.Jitter = durationpb.New(0)
	in := func(s *pb.JobSpec) planInput {
		sched, err := jobSchedule(&pb.Job{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		return planInput{job: &pb.Job{Spec: s, Generation: 1}, status: &pb.JobStatus{CursorUnix: t0.Unix() - 5},
			sched: sched, now: t0}
	}
	a, b := in(plain), in(zero)
	if pa, pb := planJob(a), planJob(b); len(pa.fires) != len(pb.fires) || !pa.wake.Equal(pb.wake) {
		t.Fatalf("jitter 0s planned %d fires waking %v, none %d waking %v", len(pb.fires), pb.wake, len(pa.fires), pa.wake)
	}
	if na, nb := testing.AllocsPerRun(50, func() { planJob(a) }), testing.AllocsPerRun(50, func() { planJob(b) }); nb > na {
		t.Fatalf("a plan with jitter 0s allocates %v times, without jitter %v", nb, na)
	}
}

// TestAtFiresOnce: an @at job fires its one slot, then has none.
func TestAtFiresOnce(t *testing.T) {
	h := newHarness(t)
	h.putJob(spec("once", "@at "+t0.Add(15*time.Second).Format(time.RFC3339)))
	h.lead()
	h.step(40 * time.Second)
	runs := h.runs("once")
	if len(runs) != 1 || runs[0].GetSlotUnix() != t0.Add(15*time.Second).Unix() || runs[0].GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("runs %v, want one success at its slot", runs)
	}
	if l := h.s.current(); l.heap.len() != 0 {
		t.Fatalf("the heap still holds %d jobs after the @at fired", l.heap.len())
	}
}

// TestMaxRunsStopsTheSchedule: after max_runs slots the job pauses itself
// and its later slots are recorded missed (paused).
func TestMaxRunsStopsTheSchedule(t *testing.T) {
	h := newHarness(t)
	s := spec("limited", "@every 10s")
	s.MaxRuns = 3
	h.putJob(s)
	h.lead()
	h.step(60 * time.Second)
	fired := h.runsIn("limited", pb.RunState_RUN_STATE_SUCCEEDED)
	if len(fired) != 3 {
		t.Fatalf("%d runs fired, want max_runs 3", len(fired))
	}
	j, err := h.fsm.Job("limited")
	if err != nil {
		t.Fatal(err)
	}
	if !j.GetSpec().GetPaused() || j.GetSpec().GetPauseNote() != fsm.NoteMaxRuns {
		t.Fatalf("spec %v, want paused with %q", j.GetSpec(), fsm.NoteMaxRuns)
	}
	for _, r := range h.runsIn("limited", pb.RunState_RUN_STATE_MISSED) {
		if r.GetReason() != fsm.ReasonPaused || r.GetSlotUnix() <= fired[2].GetSlotUnix() {
			t.Errorf("missed %v, want only later slots, paused", r)
		}
	}
}

// TestPauseAfterFailuresStopsTheSchedule: the second failed run in a row
// pauses the job; nothing fires after it.
func TestPauseAfterFailuresStopsTheSchedule(t *testing.T) {
	h := newHarness(t)
	s := spec("flaky", "@every 10s")
	s.PauseAfterFailures = 2
	h.putJob(s)
	h.exec.setOutcome("flaky", pb.RunState_RUN_STATE_FAILED)
	h.lead()
	h.step(60 * time.Second)
	if n := len(h.exec.startedOf("flaky")); n != 2 {
		t.Fatalf("%d attempts, want 2: the second failure pauses the job", n)
	}
	j, _ := h.fsm.Job("flaky")
	last := h.runsIn("flaky", pb.RunState_RUN_STATE_FAILED)[1]
	if !j.GetSpec().GetPaused() || !strings.Contains(j.GetSpec().GetPauseNote(), last.GetId()) {
		t.Fatalf("spec %v, want paused naming %s", j.GetSpec(), last.GetId())
	}
}

// TestPauseUntilEndsThroughTheLog: the leader ends a pause with an end at
// its end; the slots inside it go to the catch-up policy: those that are
// out of the window by the end are recorded missed (paused), the others
// caught up (all), or missed by the policy (none).
func TestPauseUntilEndsThroughTheLog(t *testing.T) {
	for _, tc := range []struct {
		policy     pb.CatchupPolicy
		caughtUp   []int64 // slots, seconds after t0
		missed     []int64
		missReason string
	}{
		{pb.CatchupPolicy_CATCHUP_POLICY_ALL, []int64{30, 40}, []int64{10, 20}, fsm.ReasonPaused},
		{pb.CatchupPolicy_CATCHUP_POLICY_NONE, nil, []int64{10, 20, 30, 40}, ""},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			h := newHarness(t)
			s := spec("window", "@every 10s")
			s.Catchup = &pb.Catchup{Window: durationpb.New(20 * time.Second), Policy: tc.policy}
			h.putJob(s)
			until := t0.Add(45 * time.Second)
			h.apply(&pb.Command{Kind: &pb.Command_SetPaused{SetPaused: &pb.SetPausedCommand{
				Name: "window", Paused: true, UntilUnix: until.Unix()}}})
			h.lead()
			h.step(60 * time.Second)
			j, _ := h.fsm.Job("window")
			if j.GetSpec().GetPaused() || j.GetUpdatedBy() != fsm.PrincipalSystem {
				t.Fatalf("after its end: %v updated by %q, want resumed by the leader", j.GetSpec(), j.GetUpdatedBy())
			}
			var caught, missed []int64
			for _, r := range h.runs("window") {
				at := r.GetSlotUnix() - t0.Unix()
				switch {
				case at > 45:
				case r.GetState() == pb.RunState_RUN_STATE_MISSED:
					for n := r.GetSlotUnix(); n <= r.GetLastSlotUnix(); n += 10 {
						missed = append(missed, n-t0.Unix())
					}
					if tc.missReason != "" && r.GetReason() != tc.missReason {
						t.Errorf("missed %v, want reason %s", r, tc.missReason)
					}
				case r.GetKind() == pb.FireKind_FIRE_KIND_CATCHUP:
					caught = append(caught, at)
				default:
					t.Errorf("run %v inside the pause", r)
				}
			}
			if !equalInts(caught, tc.caughtUp) || !equalInts(missed, tc.missed) {
				t.Fatalf("caught up %v, missed %v; want %v, %v", caught, missed, tc.caughtUp, tc.missed)
			}
		})
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// startBackfill backfills name's slots in [from, to) after t0, as the API
// would start it.
func (h *harness) startBackfill(name string, from, to time.Duration, every time.Duration, overlap string, concurrent uint32) {
	h.t.Helper()
	j, err := h.fsm.Job(name)
	if err != nil {
		h.t.Fatal(err)
	}
	h.apply(&pb.Command{Kind: &pb.Command_StartBackfill{StartBackfill: &pb.StartBackfillCommand{
		Job: name, Generation: j.GetGeneration(), FromUnix: t0.Add(from).Unix(), ToUnix: t0.Add(to).Unix(),
		FirstSlotUnix: t0.Add(from).Unix(), Slots: uint64((to - from) / every), Overlap: overlap, MaxConcurrent: concurrent,
	}}})
}

// TestBackfillFiresEverySlotOnce: a backfill fires each slot of its range
// once, in order, as runs of kind BACKFILL with their slot's identity,
// under tokens above every earlier one; a failover in the middle goes on
// where it stopped; then it is done.
func TestBackfillFiresEverySlotOnce(t *testing.T) {
	h := newHarness(t)
	h.clock.Set(t0.Add(10 * time.Minute))
	h.putJob(spec("past", "@every 10s"))
	h.startBackfill("past", 0, 100*time.Second, 10*time.Second, fsm.BackfillBufferOne, 1)
	before := h.fsm.FencingToken()
	h.exec.gate("past")
	h.lead()
	h.waitFor("the first backfill run", func() bool { return h.exec.blockedCount("past") == 1 })
	// A failover while the first run executes: the next leader
	// re-dispatches it, then goes on.
	h.s.SetLeader(false)
	h.prop.term.Add(1)
	h.exec.open("past")
	h.lead()
	h.step(5 * time.Second)
	byslot := map[int64]int{}
	for _, r := range h.runs("past") {
		if r.GetKind() != pb.FireKind_FIRE_KIND_BACKFILL {
			continue
		}
		byslot[r.GetSlotUnix()]++
		if r.GetState() != pb.RunState_RUN_STATE_SUCCEEDED || r.GetAttempts()[0].GetToken() <= before {
			t.Errorf("backfill run %v: want succeeded, tokens above %d", r, before)
		}
	}
	for s := t0; s.Before(t0.Add(100 * time.Second)); s = s.Add(10 * time.Second) {
		if byslot[s.Unix()] != 1 {
			t.Errorf("slot %v: %d backfill runs, want 1", s, byslot[s.Unix()])
		}
	}
	var order []int64
	for _, a := range h.exec.startedOf("past") {
		if a.Kind == pb.FireKind_FIRE_KIND_BACKFILL && a.Number == 1 {
			order = append(order, a.ScheduledAt.Unix()-t0.Unix())
		}
	}
	if !equalInts(order, []int64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}) {
		t.Errorf("first attempts in order %v, want each slot once, oldest first", order)
	}
	if bf := status(h, "past").GetBackfill(); bf.GetState() != pb.BackfillState_BACKFILL_STATE_DONE || bf.GetFired() != 10 {
		t.Fatalf("backfill %v, want done with 10 fired", bf)
	}
}

// TestBackfillAllowRunsConcurrently: overlap allow runs up to
// max_concurrent backfill runs at once, beside each other.
func TestBackfillAllowRunsConcurrently(t *testing.T) {
	h := newHarness(t)
	h.clock.Set(t0.Add(10 * time.Minute))
	h.putJob(spec("past", "@every 10s"))
	h.startBackfill("past", 0, 60*time.Second, 10*time.Second, fsm.BackfillAllow, 3)
	h.exec.gate("past")
	h.waiting = 0
	h.s.SetLeader(true)
	h.waitFor("three backfill runs at once", func() bool { return h.exec.blockedCount("past") == 3 })
	h.release("past")
	h.waitFor("the backfill to end", func() bool {
		return status(h, "past").GetBackfill().GetState() == pb.BackfillState_BACKFILL_STATE_DONE
	})
	if n := h.exec.maxConcurrent("past"); n != 3 {
		t.Fatalf("at most %d backfill runs at once, want 3", n)
	}
}

// TestTriggerPayloadAndOverlap: a trigger's payload is the webhook's body
// for that run only, and its overlap allow runs it beside the job's open
// run, though the job's own policy is skip.
func TestTriggerPayloadAndOverlap(t *testing.T) {
	h := newHarness(t)
	s := spec("hook", "@every 1h")
	s.Http.Body = "job body"
	h.putJob(s)
	h.exec.gate("hook")
	h.s.SetLeader(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := h.s.Trigger(ctx, &pb.Fire{Job: "hook", RequestId: "a"}); err != nil || !res.GetAccepted() {
		t.Fatalf("trigger: %v, %v", res, err)
	}
	res, err := h.s.Trigger(ctx, &pb.Fire{Job: "hook", RequestId: "b", Payload: `{"n":2}`, Overlap: pb.Overlap_OVERLAP_ALLOW})
	if err != nil || !res.GetAccepted() || res.GetRun().GetPayload() != `{"n":2}` {
		t.Fatalf("trigger with a payload: %v, %v", res, err)
	}
	h.waitFor("both runs executing at once", func() bool { return h.exec.blockedCount("hook") == 2 })
	h.release("hook")
	bodies := map[string]string{}
	for _, a := range h.exec.startedOf("hook") {
		bodies[a.RunID] = a.HTTP.GetBody()
	}
	if bodies[res.GetRunId()] != `{"n":2}` || len(bodies) != 2 {
		t.Fatalf("bodies by run %v, want the payload for %s and the job's body for the other", bodies, res.GetRunId())
	}
	for id, b := range bodies {
		if id != res.GetRunId() && b != "job body" {
			t.Fatalf("run %s sent %q, want the job's body", id, b)
		}
	}
}

// TestJitterHoldsADueSlot: planned between a slot and its dispatch time
// (the job was due for another reason), the slot waits, and the plan
// wakes at its dispatch time, when it fires on time.
func TestJitterHoldsADueSlot(t *testing.T) {
	s := spec("spread", "@every 10s")
	s.Jitter = durationpb.New(8 * time.Second)
	sched, err := jobSchedule(&pb.Job{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	slot := t0
	for schedule.Jitter("spread", slot, 8*time.Second) < 2*time.Second {
		slot = slot.Add(10 * time.Second)
	}
	delay := schedule.Jitter("spread", slot, 8*time.Second)
	in := planInput{job: &pb.Job{Spec: s, Generation: 1}, status: &pb.JobStatus{CursorUnix: slot.Unix() - 10},
		sched: sched, now: slot.Add(time.Second)}
	if p := planJob(in); len(p.fires) != 0 || !p.wake.Equal(slot.Add(delay)) {
		t.Fatalf("a second after the slot: %v, waking %v; want nothing, waking at %v", p.fires, p.wake, slot.Add(delay))
	}
	in.now = slot.Add(delay)
	p := planJob(in)
	if len(p.fires) != 1 || p.fires[0].GetKind() != pb.FireKind_FIRE_KIND_SCHEDULED ||
		time.Duration(p.fires[0].GetJitterMs())*time.Millisecond != delay {
		t.Fatalf("at its dispatch time: %v, want the slot scheduled with jitter %v", p.fires, delay)
	}
}
