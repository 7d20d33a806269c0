package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// previewCount is how many slots of each random job the property follows.
const previewCount = 12

// randomSpec is a job of one to three random specs — cron with and without
// seconds, wildcards and fixed times (so both daylight-saving rules), the
// Quartz day items, @every with an offset, @at — in a zone with DST (or
// Lord Howe's half hour), sometimes with a jitter. It is valid as the API
// would store it at now.
func randomSpec(rng *rand.Rand, name string, now time.Time) *pb.JobSpec {
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	member := func() string {
		switch rng.IntN(6) {
		case 0:
			return fmt.Sprintf("%d %s * * *", rng.IntN(60), pick("*", "*/3", "2", "1-3", "9,21"))
		case 1:
			return fmt.Sprintf("%d %d %s * *", rng.IntN(60), rng.IntN(24), pick("L", "LW", "15W", "L-2", "1,15"))
		case 2:
			return fmt.Sprintf("%d %d * * %s", rng.IntN(60), rng.IntN(24), pick("fri#3", "5L", "mon#1,fri#2", "0L", "mon-fri"))
		case 3:
			every := []int{45, 90, 600, 3600, 5400}[rng.IntN(5)]
			return fmt.Sprintf("@every %ds offset %ds", every, rng.IntN(every))
		case 4:
			return fmt.Sprintf("*/%d * %s * * *", []int{20, 30}[rng.IntN(2)], pick("*", "2", "*/2"))
		default:
			return "@at " + now.Add(time.Duration(rng.IntN(48*3600))*time.Second).Format(time.RFC3339)
		}
	}
	s := spec(name, "")
	s.Timezone = pick("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe")
	s.Catchup = &pb.Catchup{Window: durationpb.New(time.Hour), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL}
	s.Overlap = pb.Overlap_OVERLAP_ALLOW // every slot fires: overlap is not the property
	s.HistoryLimit = 1000
	n := 1 + rng.IntN(3)
	for range n {
		if m := member(); !slices.Contains(s.Schedules, m) {
			s.Schedules = append(s.Schedules, m)
		}
	}
	if len(s.Schedules) == 1 && rng.IntN(2) == 0 {
		s.Schedule, s.Schedules = s.Schedules[0], nil
	}
	if rng.IntN(3) == 0 {
		s.Jitter = durationpb.New(time.Duration(rng.IntN(40_000)) * time.Millisecond)
	}
	return s
}

// TestJobNextIsWhatFires: for random jobs, calendars and freezes on the
// fake clock, the slots `job next` (PreviewSchedule) lists are exactly
// those the ledger then records — each fired once, skipped with the
// calendar or freeze job next named, or, while the job is paused, recorded
// missed with its reason — and nothing else. Jitter delays dispatches,
// never slots.
func TestJobNextIsWhatFires(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 29))
	start := time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC) // two days before Europe's fall back
	tried := 0
	for tried < 24 {
		s := randomSpec(rng, fmt.Sprintf("job-%d", tried), start)
		probe := proto2(s)
		jobspec.Normalize(probe)
		if jobspec.Validate(probe, start) != nil {
			continue // a member that never fires, or a jitter past an @every
		}
		tried++
		cals, fr := randomRules(rng, s, start)
		t.Run(s.GetName(), func(t *testing.T) { checkNextIsWhatFires(t, s, cals, fr, start) })
	}
}

// randomRules gives s (at random) calendars to exclude and to keep only,
// of random dates, ranges and weekly windows in a zone with DST, and
// perhaps a freeze over a stretch of the days to come.
func randomRules(rng *rand.Rand, s *pb.JobSpec, now time.Time) ([]*pb.CalendarSpec, *pb.Freeze) {
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	var cals []*pb.CalendarSpec
	refs := &pb.CalendarRefs{}
	for i := range rng.IntN(3) {
		c := &pb.CalendarSpec{Name: fmt.Sprintf("%s-cal-%d", s.GetName(), i), Timezone: pick("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe")}
		for range 1 + rng.IntN(3) {
			day := now.AddDate(0, 0, rng.IntN(40))
			from := now.Add(time.Duration(rng.IntN(240)) * time.Hour)
			switch rng.IntN(4) {
			case 0:
				c.Entries = append(c.Entries, &pb.CalendarEntry{Date: day.Format(time.DateOnly)})
			case 1:
				to := from.Add(time.Duration(1+rng.IntN(48*60)) * time.Minute)
				c.Entries = append(c.Entries, &pb.CalendarEntry{From: from.Format(time.RFC3339), To: to.Format(time.RFC3339)})
			case 2:
				c.Entries = append(c.Entries, &pb.CalendarEntry{From: from.Format("2006-01-02T15:04"), To: from.AddDate(0, 0, 1+rng.IntN(5)).Format(time.DateOnly)})
			default:
				c.Entries = append(c.Entries, &pb.CalendarEntry{
					Days: []string{pick("sat", "sun", "mon-fri", "tue", "fri")}, Between: pick("", "18:00-06:00", "09:00-17:00", "00:00-03:30"),
				})
			}
		}
		cals = append(cals, c)
		if rng.IntN(3) == 0 {
			refs.Only = append(refs.Only, c.GetName())
		} else {
			refs.Exclude = append(refs.Exclude, c.GetName())
		}
	}
	if len(cals) > 0 {
		s.Calendars = refs
	}
	if rng.IntN(3) != 0 {
		return cals, nil
	}
	from := now.Add(time.Duration(rng.IntN(72*60)) * time.Minute)
	return cals, &pb.Freeze{
		Name: s.GetName() + "-freeze",
		From: timestamppb.New(from), To: timestamppb.New(from.Add(time.Duration(1+rng.IntN(24*60)) * time.Minute)),
	}
}

func proto2(s *pb.JobSpec) *pb.JobSpec {
	c := spec(s.GetName(), s.GetSchedule())
	c.Schedules, c.Timezone, c.Jitter, c.Catchup, c.Overlap, c.HistoryLimit, c.Calendars =
		s.GetSchedules(), s.GetTimezone(), s.GetJitter(), s.GetCatchup(), s.GetOverlap(), s.GetHistoryLimit(), s.GetCalendars()
	return c
}

func checkNextIsWhatFires(t *testing.T, s *pb.JobSpec, cals []*pb.CalendarSpec, fr *pb.Freeze, start time.Time) {
	h := newHarness(t)
	h.clock.Set(start)
	for _, c := range cals {
		zone, err := jobspec.ValidateCalendar(c)
		if err != nil {
			t.Fatalf("calendar %v: %v", c, err)
		}
		h.apply(&pb.Command{Kind: &pb.Command_PutCalendar{PutCalendar: &pb.PutCalendarCommand{Calendar: &pb.Calendar{Spec: c, Zone: zone}}}})
	}
	if fr != nil {
		h.apply(&pb.Command{Kind: &pb.Command_CreateFreeze{CreateFreeze: &pb.CreateFreezeCommand{Freeze: fr}}})
	}
	h.putJob(s)
	jobs := api.NewJobService(api.Deps{Store: previewStore{h.prop}, Registry: h.fsm, Calendars: h.fsm, Now: h.clock.Now})
	resp, err := jobs.PreviewSchedule(context.Background(), &pb.PreviewScheduleRequest{Name: s.GetName(), Count: previewCount})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	skips := map[int64]string{} // what job next says stops a slot
	for _, sl := range resp.GetSlots() {
		want = append(want, sl.GetTime().AsTime().Unix())
		if sl.GetSkipped() != "" {
			skips[sl.GetTime().AsTime().Unix()] = sl.GetSkipped()
		}
	}
	t.Logf("%q %q in %s, jitter %v, calendars %v, freeze %v: %d slots, %d skipped",
		s.GetSchedule(), s.GetSchedules(), s.GetTimezone(), s.GetJitter().AsDuration(), s.GetCalendars(), fr, len(want), len(skips))
	h.lead()
	// Pause the job over a few slots in the middle: they are recorded
	// missed, with the reason, rather than lost.
	pauseFrom, pauseTo := len(want)/3, len(want)/2
	jitter := s.GetJitter().AsDuration()
	at := start
	for i, slot := range want {
		if i == pauseFrom {
			h.setPaused(s.GetName(), true)
		}
		at = maxTime(at, time.Unix(slot, 0).Add(slotDelay(s.GetName(), slot, jitter)).Add(time.Millisecond))
		h.clock.Set(at)
		h.settle()
		if i == pauseTo {
			h.setPaused(s.GetName(), false)
		}
	}
	sched, err := jobspec.ScheduleOf(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range h.runs(s.GetName()) {
		switch r.GetState() {
		case pb.RunState_RUN_STATE_MISSED:
			if r.GetReason() != reasonPaused {
				t.Errorf("missed %v: want only the paused slots missed", r)
			}
			got = append(got, slotsIn(sched, r.GetSlotUnix(), r.GetLastSlotUnix())...)
			if n := len(slotsIn(sched, r.GetSlotUnix(), r.GetLastSlotUnix())); uint64(n) != r.GetMissedCount() {
				t.Errorf("missed %v counts %d slots, the schedule has %d in its range", r, r.GetMissedCount(), n)
			}
		case pb.RunState_RUN_STATE_SKIPPED:
			if why := skips[r.GetSlotUnix()]; why == "" || r.GetReason() != why {
				t.Errorf("skipped %v: job next said %q", r, why)
			}
			got = append(got, r.GetSlotUnix())
		default:
			if r.GetState() != pb.RunState_RUN_STATE_SUCCEEDED || skips[r.GetSlotUnix()] != "" {
				t.Errorf("run %v: want fired and succeeded (job next said %q)", r, skips[r.GetSlotUnix()])
			}
			got = append(got, r.GetSlotUnix())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the ledger holds slots\n%v\njob next listed\n%v", stamps(got), stamps(want))
	}
}

// previewStore is the harness's proposer as the API's store: one node,
// whose reads are always current.
type previewStore struct{ *fakeProposer }

func (previewStore) ReadBarrier(context.Context) error { return nil }

// slotsIn lists the slots of sched from first to last, both included.
func slotsIn(sched schedule.Schedule, first, last int64) []int64 {
	var out []int64
	for t := sched.Next(time.Unix(first-1, 0)); !t.IsZero() && t.Unix() <= last; t = sched.Next(t) {
		out = append(out, t.Unix())
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func stamps(slots []int64) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = time.Unix(s, 0).UTC().Format(time.RFC3339)
	}
	return out
}
