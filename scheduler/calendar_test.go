package scheduler

import (
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A job every second fires around an exclusion calendar, a freeze and a
// deferring freeze on the fake clock: the ledger holds a fire or a skip
// with its rule for every slot, each once, and exactly the slots the
// preview marks are skipped; the deferred slot fires once when its freeze
// lifts, as a catch-up.
func TestSlotsFireAroundCalendarsAndFreezes(t *testing.T) {
	h := newHarness(t)
	at := func(s int64) string { return t0.Add(time.Duration(s) * time.Second).UTC().Format(time.RFC3339) }
	h.apply(&pb.Command{Kind: &pb.Command_PutCalendar{PutCalendar: &pb.PutCalendarCommand{Calendar: &pb.Calendar{
		Spec: &pb.CalendarSpec{Name: "closed", Entries: []*pb.CalendarEntry{{From: at(5), To: at(10)}}},
	}}}})
	freeze := func(name string, from, to int64, deferring bool) {
		h.apply(&pb.Command{Kind: &pb.Command_CreateFreeze{CreateFreeze: &pb.CreateFreezeCommand{Freeze: &pb.Freeze{
			Name: name, From: timestampAt(time.Duration(from) * time.Second), To: timestampAt(time.Duration(to) * time.Second), Defer: deferring,
		}}}})
	}
	freeze("maintenance", 14, 18, false)
	freeze("deploy", 22, 26, true)
	s := spec("tick", "* * * * * *")
	s.Calendars = &pb.CalendarRefs{Exclude: []string{"closed"}}
	s.HistoryLimit = 1000
	h.putJob(s)
	h.lead()
	h.step(32 * time.Second)

	stops, err := h.fsm.Stops("tick")
	if err != nil {
		t.Fatal(err)
	}
	bySlot := map[int64][]*pb.Run{}
	for _, r := range h.runs("tick") {
		bySlot[r.GetSlotUnix()-t0.Unix()] = append(bySlot[r.GetSlotUnix()-t0.Unix()], r)
	}
	for slot := int64(1); slot <= 30; slot++ {
		runs := bySlot[slot]
		if len(runs) != 1 {
			t.Errorf("slot %d has %d runs in the ledger, want one fire or one skip", slot, len(runs))
			continue
		}
		r, want := runs[0], stops.Reason(t0.Unix()+slot)
		switch {
		case slot == 25: // the last slot the deferring freeze held: fired at the lift
			if r.GetState() == pb.RunState_RUN_STATE_SKIPPED || r.GetKind() != pb.FireKind_FIRE_KIND_CATCHUP || r.GetCreatedAtUnixNano() < t0.Add(26*time.Second).UnixNano() {
				t.Errorf("slot 25: %v, want it fired as a catch-up once deploy lifted", r)
			}
		case want == "":
			if r.GetState() == pb.RunState_RUN_STATE_SKIPPED || len(r.GetAttempts()) == 0 {
				t.Errorf("slot %d: %v, want it fired", slot, r)
			}
		case r.GetState() != pb.RunState_RUN_STATE_SKIPPED || r.GetReason() != want:
			t.Errorf("slot %d: %v, want SKIPPED %s", slot, r, want)
		}
	}
	for slot, reason := range map[int64]string{5: "calendar:closed", 9: "calendar:closed", 14: "freeze:maintenance", 22: "freeze:deploy", 24: "freeze:deploy"} {
		if got := stops.Reason(t0.Unix() + slot); got != reason {
			t.Errorf("preview of slot %d: %q, want %q", slot, got, reason)
		}
	}
	if v := metricValue(t, h.s.metrics.skipped.WithLabelValues("calendar")); v != 5 {
		t.Errorf("runs_skipped_total{calendar} = %v, want 5", v)
	}
	if st := status(h, "tick"); st.GetDeferredSlotUnix() != 0 {
		t.Fatalf("status %v still holds a slot", st)
	}
}
