package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// planCase describes a job at t0+at with its cursor at t0+cursor (seconds).
type planCase struct {
	name    string
	spec    func(s *pb.JobSpec)
	sched   string
	cursor  int64
	at      time.Duration
	status  func(st *pb.JobStatus)
	open    []*pb.Run
	known   map[uint64]bool
	fires   string // "kind@slot ..." (slots in seconds after t0)
	misses  string // "reason@from-to/count ..."
	adopt   string // run ids
	wake    time.Duration
	noWake  bool
	wakeNow bool
}

func (c planCase) run(t *testing.T) {
	t.Helper()
	s := spec("job", c.sched)
	if c.spec != nil {
		c.spec(s)
	}
	st := &pb.JobStatus{CursorUnix: t0.Unix() + c.cursor}
	if c.status != nil {
		c.status(st)
	}
	for _, r := range c.open {
		st.OpenRunIds = append(st.OpenRunIds, r.GetId())
	}
	sched, err := schedule.Parse(s.GetSchedule(), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(c.at)
	p := planJob(planInput{
		job:    &pb.Job{Spec: s, Generation: 3},
		status: st,
		open:   c.open,
		sched:  sched,
		now:    now,
		term:   5,
		self:   "n1",
		known:  func(tok uint64) bool { return c.known[tok] },
	})
	if got := formatFires(p.fires); got != c.fires {
		t.Errorf("fires = %q, want %q", got, c.fires)
	}
	if got := formatMisses(p.misses); got != c.misses {
		t.Errorf("misses = %q, want %q", got, c.misses)
	}
	var adopted []string
	for _, r := range p.adopt {
		adopted = append(adopted, r.GetId())
	}
	if got := strings.Join(adopted, " "); got != c.adopt {
		t.Errorf("adopt = %q, want %q", got, c.adopt)
	}
	switch {
	case c.noWake:
		if !p.wake.IsZero() {
			t.Errorf("wake = %v, want none", p.wake.Sub(t0))
		}
	case c.wakeNow:
		if !p.wake.Equal(now) {
			t.Errorf("wake = %v, want now (%v)", p.wake.Sub(t0), c.at)
		}
	default:
		if want := t0.Add(c.wake); !p.wake.Equal(want) {
			t.Errorf("wake = %v, want %v", p.wake.Sub(t0), c.wake)
		}
	}
	if len(c.open) == 0 && st.GetBufferedSlotUnix() == 0 {
		// The rebuild's shortcut must agree with the full plan.
		want := p.wake
		if p.busy() {
			want = now
		}
		in := planInput{job: &pb.Job{Spec: s, Generation: 3}, status: st, sched: sched, now: now}
		if got := firstWake(in); !got.Equal(want) {
			t.Errorf("firstWake = %v, want %v as planJob says", got.Sub(t0), want.Sub(t0))
		}
	}
	for _, f := range p.fires {
		if f.GetKind() == pb.FireKind_FIRE_KIND_SCHEDULED || f.GetKind() == pb.FireKind_FIRE_KIND_CATCHUP {
			if f.GetGeneration() != 3 || f.GetJob() != "job" {
				t.Errorf("fire %v: want job/generation job/3", f)
			}
		}
	}
}

func formatFires(fires []*pb.Fire) string {
	var out []string
	for _, f := range fires {
		k := kindLabel(f.GetKind())
		if f.GetRunId() != "" {
			out = append(out, k+":"+f.GetRunId())
			continue
		}
		out = append(out, fmt.Sprintf("%s@%d", k, f.GetSlotUnix()-t0.Unix()))
	}
	return strings.Join(out, " ")
}

func formatMisses(ms []*pb.Miss) string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s@%d-%d/%d", m.GetReason(), m.GetFromSlotUnix()-t0.Unix(),
			m.GetToSlotUnix()-t0.Unix(), m.GetCount()))
	}
	return strings.Join(out, " ")
}

func window(d time.Duration, p pb.CatchupPolicy) func(*pb.JobSpec) {
	return func(s *pb.JobSpec) { s.Catchup = &pb.Catchup{Window: durationpb.New(d), Policy: p} }
}

func overlap(o pb.Overlap, more ...func(*pb.JobSpec)) func(*pb.JobSpec) {
	return func(s *pb.JobSpec) {
		s.Overlap = o
		for _, m := range more {
			m(s)
		}
	}
}

// openRun is a run of job in state st whose current attempt has the token,
// term, node and kind given.
func openRun(id string, slot int64, st pb.RunState, token, term uint64, node string, kind pb.FireKind) *pb.Run {
	a := &pb.Attempt{Number: 1, Token: token, Term: term, NodeId: node, Kind: kind, State: pb.RunState_RUN_STATE_DISPATCHED}
	if st == pb.RunState_RUN_STATE_RETRYING {
		a.State = pb.RunState_RUN_STATE_FAILED
	}
	return &pb.Run{Id: id, Job: "job", Generation: 3, SlotUnix: t0.Unix() + slot, State: st, Attempts: []*pb.Attempt{a}}
}

// lateRun marks r as committed d after its slot.
func lateRun(r *pb.Run, d time.Duration) *pb.Run {
	r.CreatedAtUnixNano = time.Unix(r.GetSlotUnix(), 0).Add(d).UnixNano()
	return r
}

func retrying(id string, slot int64, nextAt time.Duration) *pb.Run {
	r := openRun(id, slot, pb.RunState_RUN_STATE_RETRYING, 7, 5, "n1", pb.FireKind_FIRE_KIND_SCHEDULED)
	r.NextAttemptAtUnixNano = t0.Add(nextAt).UnixNano()
	return r
}

const (
	dispatched = pb.RunState_RUN_STATE_DISPATCHED
	scheduled  = pb.FireKind_FIRE_KIND_SCHEDULED
	redispatch = pb.FireKind_FIRE_KIND_REDISPATCH
)

func TestPlanSlots(t *testing.T) {
	cases := []planCase{
		{name: "nothing due: wake at the next slot", sched: "@every 10s", at: 5 * time.Second, wake: 10 * time.Second},
		{name: "on-time slot fires as scheduled", sched: "@every 10s", at: 10*time.Second + 300*time.Millisecond,
			fires: "scheduled@10", wake: 20 * time.Second},
		{name: "backward clock: cursor ahead of now fires nothing", sched: "@every 10s", cursor: 3600,
			at: 20 * time.Second, wake: 3610 * time.Second},
		{name: "slot at the cursor is not due again", sched: "@every 10s", cursor: 10, at: 10 * time.Second,
			wake: 20 * time.Second},
		{name: "all: every slot in the window oldest first, older ones missed", sched: "@every 10s",
			at:    95 * time.Second,
			spec:  overlap(pb.Overlap_OVERLAP_ALLOW, window(35*time.Second, pb.CatchupPolicy_CATCHUP_POLICY_ALL)),
			fires: "catchup@70 catchup@80 catchup@90", misses: "catchup_window@10-60/6", wake: 100 * time.Second},
		{name: "all: newest due slot on time is scheduled", sched: "@every 10s", at: 30*time.Second + time.Second,
			spec: overlap(pb.Overlap_OVERLAP_ALLOW), fires: "catchup@10 catchup@20 scheduled@30", wake: 40 * time.Second},
		{name: "skip: two on-time slots are a backlog, one at a time", sched: "@every 1s",
			at: 2*time.Second + 600*time.Millisecond, fires: "catchup@1", wake: 3 * time.Second},
		{name: "all: capped per tick, the rest next tick", sched: "@every 1s", at: 150 * time.Second,
			spec:  overlap(pb.Overlap_OVERLAP_ALLOW, window(time.Hour, pb.CatchupPolicy_CATCHUP_POLICY_ALL)),
			fires: catchups(1, MaxCatchupPerTick), wakeNow: true},
		{name: "latest: only the newest slot, older ones missed by policy", sched: "@every 10s",
			at: 95 * time.Second, spec: window(time.Minute, pb.CatchupPolicy_CATCHUP_POLICY_LATEST),
			fires: "catchup@90", misses: "catchup_window@10-30/3 catchup_policy@40-80/5", wake: 100 * time.Second},
		{name: "latest: newest outside the window is missed too", sched: "@every 100s",
			at: 270 * time.Second, spec: window(time.Minute, pb.CatchupPolicy_CATCHUP_POLICY_LATEST),
			misses: "catchup_window@100-200/2", wake: 300 * time.Second},
		{name: "none: late slots missed, the on-time one fires", sched: "@every 10s",
			at: 30*time.Second + 500*time.Millisecond, spec: window(time.Minute, pb.CatchupPolicy_CATCHUP_POLICY_NONE),
			fires: "scheduled@30", misses: "catchup_policy@10-20/2", wake: 40 * time.Second},
		{name: "none: a slot 2s late is missed", sched: "@every 10s", at: 12 * time.Second,
			spec:   window(time.Minute, pb.CatchupPolicy_CATCHUP_POLICY_NONE),
			misses: "catchup_policy@10-10/1", wake: 20 * time.Second},
		{name: "window 0 still fires on-time slots", sched: "@every 10s", at: 11 * time.Second,
			spec: window(0, pb.CatchupPolicy_CATCHUP_POLICY_ALL), fires: "scheduled@10", wake: 20 * time.Second},
		{name: "paused: due slots recorded paused, no fire", sched: "@every 10s", at: 35 * time.Second,
			spec: func(s *pb.JobSpec) { s.Paused = true }, misses: "paused@10-30/3", wake: 40 * time.Second},
		{name: "start_at: earlier slots are not slots of the job", sched: "@every 10s", at: 41 * time.Second,
			spec:  func(s *pb.JobSpec) { s.StartAt = timestamppb.New(t0.Add(35 * time.Second)) },
			fires: "scheduled@40", wake: 50 * time.Second},
		{name: "start_at in the future: wake then", sched: "@every 10s", at: 5 * time.Second,
			spec: func(s *pb.JobSpec) { s.StartAt = timestamppb.New(t0.Add(3600 * time.Second)) },
			wake: 3600 * time.Second},
		{name: "end_at: no slot after it, no wake", sched: "@every 10s", at: 45 * time.Second,
			spec:  func(s *pb.JobSpec) { s.EndAt = timestamppb.New(t0.Add(40 * time.Second)) },
			fires: "catchup@20", noWake: true, cursor: 10},
		{name: "backlog longer than the scan is missed in pieces", sched: "@every 1s", at: 30000 * time.Second,
			misses: fmt.Sprintf("catchup_window@1-%d/%d", maxScan, maxScan), wakeNow: true},
		{name: "skip: catch-up one slot at a time", sched: "@every 10s", at: 35 * time.Second,
			fires: "catchup@10", wake: 40 * time.Second},
		{name: "skip: catch-up waits for the open run", sched: "@every 10s", at: 35 * time.Second,
			open: []*pb.Run{openRun("job-1", 0, dispatched, 1, 5, "n1", scheduled)}, known: map[uint64]bool{1: true},
			wake: 40 * time.Second},
		{name: "skip: an on-time slot is proposed despite the open run (the FSM skips it)", sched: "@every 10s",
			at: 10 * time.Second, open: []*pb.Run{openRun("job-1", 0, dispatched, 1, 5, "n1", scheduled)},
			known: map[uint64]bool{1: true}, fires: "scheduled@10", wake: 20 * time.Second},
		{name: "skip: an on-time slot waits for a run that was itself fired late", sched: "@every 10s",
			at: 10 * time.Second, open: []*pb.Run{lateRun(openRun("job-1", 0, dispatched, 1, 5, "n1", scheduled), 1500*time.Millisecond)},
			known: map[uint64]bool{1: true}, wake: 20 * time.Second},
		{name: "skip: a long held backlog does not ask to be planned again at once", sched: "@every 1s",
			at: 300 * time.Second, spec: window(time.Hour, pb.CatchupPolicy_CATCHUP_POLICY_ALL),
			open: []*pb.Run{openRun("job-1", 0, dispatched, 1, 5, "n1", scheduled)}, known: map[uint64]bool{1: true},
			wake: 300*time.Second + heldRecheck},
		{name: "cancel_other: catch-up one at a time too", sched: "@every 10s", at: 35 * time.Second,
			spec: overlap(pb.Overlap_OVERLAP_CANCEL_OTHER), fires: "catchup@10", wake: 40 * time.Second},
		{name: "allow: catch-up all at once despite an open run", sched: "@every 10s", at: 25 * time.Second,
			spec:  overlap(pb.Overlap_OVERLAP_ALLOW),
			open:  []*pb.Run{openRun("job-1", 0, dispatched, 1, 5, "n1", scheduled)},
			known: map[uint64]bool{1: true}, fires: "catchup@10 catchup@20", wake: 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

func catchups(from, n int) string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("catchup@%d", from+i))
	}
	return strings.Join(out, " ")
}

func TestPlanRuns(t *testing.T) {
	orphan := openRun("job-4", 0, dispatched, 4, 2, "n0", scheduled)
	cases := []planCase{
		{name: "orphan of an earlier term is re-dispatched and newer slots wait", sched: "@every 10s",
			at: 25 * time.Second, open: []*pb.Run{orphan}, fires: "redispatch:job-4", wake: 25*time.Second + heldRecheck},
		{name: "orphan of an allow job: newer slots wait too", sched: "@every 10s", at: 25 * time.Second,
			spec: overlap(pb.Overlap_OVERLAP_ALLOW), open: []*pb.Run{orphan},
			fires: "redispatch:job-4", wake: 25*time.Second + heldRecheck},
		{name: "re-dispatched attempt in flight: newer slots wait for its outcome", sched: "@every 10s",
			at: 25 * time.Second, spec: overlap(pb.Overlap_OVERLAP_ALLOW),
			open:  []*pb.Run{openRun("job-4", 0, dispatched, 9, 5, "n1", redispatch)},
			known: map[uint64]bool{9: true}, wake: 25*time.Second + heldRecheck},
		{name: "own attempt unknown to the hand-off is adopted", sched: "@every 10s", at: 5 * time.Second,
			open:  []*pb.Run{openRun("job-9", 0, dispatched, 9, 5, "n1", scheduled)},
			adopt: "job-9", wake: 10 * time.Second},
		{name: "own attempt in hand is left alone", sched: "@every 10s", at: 5 * time.Second,
			open:  []*pb.Run{openRun("job-9", 0, dispatched, 9, 5, "n1", scheduled)},
			known: map[uint64]bool{9: true}, wake: 10 * time.Second},
		{name: "retry due fires", sched: "@every 100s", at: 5 * time.Second,
			open: []*pb.Run{retrying("job-7", 0, 4*time.Second)}, fires: "retry:job-7", wake: 100 * time.Second},
		{name: "retry not due: wake at its time", sched: "@every 100s", at: 5 * time.Second,
			open: []*pb.Run{retrying("job-7", 0, 8*time.Second)}, wake: 8 * time.Second},
		{name: "buffered slot fires once no run is open", sched: "@every 10s", cursor: 20, at: 25 * time.Second,
			spec:   overlap(pb.Overlap_OVERLAP_BUFFER_ONE),
			status: func(st *pb.JobStatus) { st.BufferedSlotUnix = t0.Unix() + 10 },
			fires:  "scheduled@10", noWake: true},
		{name: "buffered slot waits for the open run; an on-time slot goes to the FSM to be skipped",
			sched: "@every 10s", cursor: 20, at: 30 * time.Second,
			spec:   overlap(pb.Overlap_OVERLAP_BUFFER_ONE),
			status: func(st *pb.JobStatus) { st.BufferedSlotUnix = t0.Unix() + 10 },
			open:   []*pb.Run{openRun("job-1", 0, dispatched, 1, 5, "n1", scheduled)},
			known:  map[uint64]bool{1: true}, fires: "scheduled@30", wake: 40 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

func TestPlanUnparsableScheduleFiresNothing(t *testing.T) {
	p := planJob(planInput{
		job:    &pb.Job{Spec: spec("job", "not cron"), Generation: 1},
		status: &pb.JobStatus{CursorUnix: t0.Unix()},
		now:    t0.Add(time.Hour),
		term:   1,
	})
	if p.busy() || !p.wake.IsZero() {
		t.Fatalf("plan = %+v, want nothing", p)
	}
}
