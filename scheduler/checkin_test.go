package scheduler

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// checkinGrace is the grace of the check-in jobs below.
const checkinGrace = 3 * time.Second

func asCheckin(more ...func(*pb.JobSpec)) func(*pb.JobSpec) {
	return func(s *pb.JobSpec) {
		s.Http, s.Catchup, s.Overlap, s.Delivery = nil, nil, pb.Overlap_OVERLAP_UNSPECIFIED, pb.Delivery_DELIVERY_UNSPECIFIED
		s.Checkin = &pb.CheckinTarget{}
		s.Expect = &pb.Expect{StartWithin: durationpb.New(checkinGrace)}
		for _, m := range more {
			m(s)
		}
	}
}

func TestPlanCheckin(t *testing.T) {
	grace := checkinGrace + time.Nanosecond // a slot is missable a nanosecond after its grace
	cases := []planCase{
		{name: "a due slot within its grace waits for its ping", sched: "@every 10s", spec: asCheckin(),
			at: 12 * time.Second, wake: 10*time.Second + grace},
		{name: "at the end of the grace the slot still waits", sched: "@every 10s", spec: asCheckin(),
			at: 10*time.Second + checkinGrace, wake: 10*time.Second + grace},
		{name: "past the grace it is missed", sched: "@every 10s", spec: asCheckin(),
			at: 10*time.Second + grace, misses: "no_checkin@10-10/1", wake: 20*time.Second + grace},
		{name: "every slot past its grace, in one range", sched: "@every 10s", spec: asCheckin(),
			at: 35 * time.Second, misses: "no_checkin@10-30/3", wake: 40*time.Second + grace},
		{name: "paused: missed as they come, like any job's", sched: "@every 10s",
			spec: asCheckin(func(s *pb.JobSpec) { s.Paused = true }), at: 12 * time.Second,
			misses: "paused@10-10/1", wake: 20 * time.Second},
		{name: "a check-in run of an earlier term is no orphan", sched: "@every 10s", spec: asCheckin(),
			open: []*pb.Run{checkinRun("c1", 10, 1)}, at: 12 * time.Second, wake: 10*time.Second + grace},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// checkinRun is an open check-in run of slot (seconds after t0), opened
// then, in term.
func checkinRun(id string, slot int64, term uint64) *pb.Run {
	r := openRun(id, slot, dispatched, 7, term, "", pb.FireKind_FIRE_KIND_CHECKIN)
	r.Kind = pb.FireKind_FIRE_KIND_CHECKIN
	r.CreatedAtUnixNano = t0.Add(time.Duration(slot) * time.Second).UnixNano()
	return r
}

// TestPlanCheckinDeadline: a check-in run still open at the job's deadline
// fails; one before it wakes the job then; one whose outcome is on its way
// is left alone.
func TestPlanCheckinDeadline(t *testing.T) {
	s := spec("job", "@every 1h")
	asCheckin(func(s *pb.JobSpec) { s.Deadline = durationpb.New(time.Minute) })(s)
	sched, err := schedule.Parse(s.GetSchedule(), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	over, early, reported := checkinRun("over", 0, 5), checkinRun("early", 30, 5), checkinRun("reported", 0, 5)
	reported.GetAttempts()[0].Token = 9
	p := planJob(planInput{
		job: &pb.Job{Spec: s, Generation: 3}, status: &pb.JobStatus{CursorUnix: t0.Unix() + 30},
		open: []*pb.Run{over, early, reported}, sched: sched, now: t0.Add(time.Minute), term: 5, self: "n1",
		known: func(tok uint64) bool { return tok == 9 },
	})
	if len(p.expire) != 1 || p.expire[0].GetRunId() != "over" || p.expire[0].GetToken() != 7 ||
		p.expire[0].GetOutcome() != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED {
		t.Fatalf("expire = %v, want run over's attempt failed DEADLINE_EXCEEDED", p.expire)
	}
	if want := t0.Add(90 * time.Second); !p.wake.Equal(want) {
		t.Fatalf("wake = %v, want the deadline of run early, %v", p.wake.Sub(t0), want.Sub(t0))
	}
	if len(p.fires) != 0 {
		t.Fatalf("fires %v for a check-in job", p.fires)
	}
}

// TestCheckinJobMissesSlotsAfterTheirGrace: the leader fires nothing for a
// check-in job; a slot pinged within its grace is the ping's, the others
// are recorded missed no_checkin once their grace has passed, and a run
// open at the deadline fails.
func TestCheckinJobMissesSlotsAfterTheirGrace(t *testing.T) {
	h := newHarness(t)
	s := spec("job", "@every 10s")
	asCheckin(func(s *pb.JobSpec) { s.Deadline = durationpb.New(15 * time.Second) })(s)
	h.putJob(s)
	h.lead()
	h.step(12 * time.Second) // slot 10 is due, within its grace
	if runs := h.runs("job"); len(runs) != 0 {
		t.Fatalf("runs %v before the grace of slot 10 passed", runs)
	}
	h.step(2 * time.Second) // past it
	if missed := h.runsIn("job", pb.RunState_RUN_STATE_MISSED); len(missed) != 1 ||
		missed[0].GetReason() != fsm.ReasonNoCheckin || missed[0].GetSlotUnix() != t0.Add(10*time.Second).Unix() {
		t.Fatalf("missed %v, want slot 10 missed no_checkin", missed)
	}
	h.step(7 * time.Second) // slot 20 is due; it gets its ping
	j, err := h.fsm.Job("job")
	if err != nil {
		t.Fatal(err)
	}
	ping := h.apply(&pb.Command{Kind: &pb.Command_Checkin{Checkin: &pb.CheckinCommand{
		Job: "job", Generation: j.GetGeneration(), CursorUnix: j.GetStatus().GetCursorUnix(),
		Status: pb.CheckinStatus_CHECKIN_STATUS_START, SlotUnix: t0.Add(20 * time.Second).Unix(),
	}}}).GetRun()
	h.step(10 * time.Second)
	if runs := h.runs("job"); len(runs) != 2 || runs[1].GetId() != ping.GetId() || runs[1].GetState() != dispatched {
		t.Fatalf("runs %v, want slot 10 missed and slot 20's ping open", runs)
	}
	h.step(6 * time.Second) // slot 30 missed; the ping's run is at its deadline
	if r, err := h.fsm.Run(ping.GetId()); err != nil || r.GetState() != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED {
		t.Fatalf("run %v (%v), want DEADLINE_EXCEEDED at 15 s", r, err)
	}
	if missed := h.runsIn("job", pb.RunState_RUN_STATE_MISSED); len(missed) != 2 {
		t.Fatalf("missed %v, want slots 10 and 30", missed)
	}
	if started := h.exec.startedOf("job"); len(started) != 0 {
		t.Fatalf("the leader dispatched %v for a check-in job", started)
	}
}
