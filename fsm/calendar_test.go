package fsm_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/calendar"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const stSkipped = pb.RunState_RUN_STATE_SKIPPED

// putCalendarCmd puts spec with its zone's offsets, as the API does.
func putCalendarCmd(spec *pb.CalendarSpec) *pb.Command {
	var zone *pb.ZoneOffsets
	if spec.GetTimezone() != "" {
		loc, err := time.LoadLocation(spec.GetTimezone())
		if err != nil {
			panic(err)
		}
		zone = calendar.Offsets(loc)
	}
	return &pb.Command{Kind: &pb.Command_PutCalendar{PutCalendar: &pb.PutCalendarCommand{
		Calendar: &pb.Calendar{Spec: spec, Zone: zone},
	}}}
}

func deleteCalendarCmd(name string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_DeleteCalendar{DeleteCalendar: &pb.DeleteCalendarCommand{Name: name}}}
}

func createFreezeCmd(fr *pb.Freeze) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CreateFreeze{CreateFreeze: &pb.CreateFreezeCommand{Freeze: fr}}}
}

func deleteFreezeCmd(name string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_DeleteFreeze{DeleteFreeze: &pb.DeleteFreezeCommand{Name: name}}}
}

// rangeCal is a calendar of one range [from, to).
func rangeCal(name string, from, to int64) *pb.CalendarSpec {
	return &pb.CalendarSpec{Name: name, Entries: []*pb.CalendarEntry{{
		From: time.Unix(from, 0).UTC().Format(time.RFC3339), To: time.Unix(to, 0).UTC().Format(time.RFC3339),
	}}}
}

func freezeOf(name string, from, to int64, deferring bool, selector map[string]string) *pb.Freeze {
	return &pb.Freeze{Name: name, From: timestamppb.New(time.Unix(from, 0)), To: timestamppb.New(time.Unix(to, 0)), Defer: deferring, Selector: selector}
}

func withCalendars(spec *pb.JobSpec, exclude, only []string) *pb.JobSpec {
	spec.Calendars = &pb.CalendarRefs{Exclude: exclude, Only: only}
	return spec
}

// skipped fires f alone and expects a SKIPPED record with the reason, the
// cursor at the slot and no token issued.
func (h *harness) skipped(f *pb.Fire, reason string) *pb.Run {
	h.t.Helper()
	token := h.f.FencingToken()
	r := h.fireOne(f)
	run := r.GetRun()
	if r.GetAccepted() || r.GetReason() != reason || run.GetState() != stSkipped || run.GetReason() != reason ||
		run.GetSlotUnix() != f.GetSlotUnix() || len(run.GetAttempts()) != 0 {
		h.t.Fatalf("fire %v: %v, want a SKIPPED record with reason %q", f, r, reason)
	}
	if h.f.FencingToken() != token || h.status(f.GetJob()).GetCursorUnix() < f.GetSlotUnix() {
		h.t.Fatalf("a skipped slot took a token or left the cursor behind")
	}
	return run
}

func TestCalendarsDecideEachSlotAtApply(t *testing.T) {
	h := newHarness(t)
	slot := h.now.Unix() + 600
	h.mustOK(putCalendarCmd(rangeCal("holidays", slot, slot+120)))
	h.mustOK(putCalendarCmd(rangeCal("office", slot+60, slot+3600)))
	gen := h.create(withCalendars(testSpec("report"), []string{"holidays"}, []string{"office"}))

	h.skipped(slotFire("report", gen, slot), "calendar:holidays")    // excluded, and before office
	h.skipped(slotFire("report", gen, slot+90), "calendar:holidays") // excluded, though in office
	h.accepted(slotFire("report", gen, slot+120))                    // in office, holidays over
	h.finishOpen("report")
	h.skipped(slotFire("report", gen, slot+3600), "calendar:office") // office over
	st := h.status("report")
	if st.GetMissed() != 0 || st.GetLastOutcome() != stSkipped {
		t.Fatalf("status %v: a skip counts as no miss, and is the last outcome", st)
	}

	// The calendar changes between the leader's plan and the commit: the
	// state at apply decides.
	next := slot + 4000
	h.mustOK(putCalendarCmd(rangeCal("office", slot+60, next+60)))
	h.accepted(slotFire("report", gen, next))
	h.finishOpen("report")
	h.mustOK(putCalendarCmd(rangeCal("holidays", next, next+200)))
	h.skipped(slotFire("report", gen, next+30), "calendar:holidays")
}

func TestOnlyOneSlotPerFireEvenWhenSkipped(t *testing.T) {
	h := newHarness(t)
	slot := h.now.Unix() + 600
	h.mustOK(putCalendarCmd(rangeCal("closed", slot, slot+60)))
	gen := h.create(withCalendars(testSpec("report"), []string{"closed"}, nil))
	h.skipped(slotFire("report", gen, slot), "calendar:closed")
	h.refused(slotFire("report", gen, slot), fsm.ReasonDuplicate) // G1 holds for skips
}

func TestJobNamingAMissingCalendarIsRefused(t *testing.T) {
	h := newHarness(t)
	r := h.mustFail(createCmd(withCalendars(testSpec("report"), nil, []string{"nope"})), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	if !strings.Contains(r.GetMessage(), `calendars.only[0]: calendar "nope" not found`) {
		t.Fatalf("message %q does not name the field and the calendar", r.GetMessage())
	}
}

func TestCalendarInUseIsNotDeleted(t *testing.T) {
	h := newHarness(t)
	h.mustOK(putCalendarCmd(rangeCal("holidays", 0, 10)))
	h.create(withCalendars(testSpec("a"), []string{"holidays"}, nil))
	h.create(withCalendars(testSpec("b"), nil, []string{"holidays"}))
	r := h.mustFail(deleteCalendarCmd("holidays"), pb.ResultCode_RESULT_CODE_IN_USE, fsm.ErrInUse)
	if !strings.Contains(r.GetMessage(), `jobs "a" and "b"`) {
		t.Fatalf("message %q does not name the jobs", r.GetMessage())
	}
	h.mustOK(upsertCmd(testSpec("a"))) // no calendars any more
	h.mustOK(deleteCmd("b", 0))        // gone
	h.mustOK(deleteCalendarCmd("holidays"))
	h.mustFail(deleteCalendarCmd("holidays"), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
}

func TestCalendarPutIsVersionedAndValidated(t *testing.T) {
	h := newHarness(t)
	spec := rangeCal("holidays", 0, 10)
	r := h.mustOK(putCalendarCmd(spec))
	if !r.GetCreated() || r.GetCalendar().GetVersion() != 1 || r.GetCalendar().GetZone() != nil || r.GetCalendar().GetEntryCount() != 1 {
		t.Fatalf("create result %v", r)
	}
	if r := h.mustOK(putCalendarCmd(rangeCal("holidays", 0, 10))); r.GetChanged() {
		t.Fatal("an equal put changed the calendar")
	}
	stale := putCalendarCmd(rangeCal("holidays", 0, 20))
	stale.GetPutCalendar().ExpectedVersion = 7
	h.mustFail(stale, pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, fsm.ErrVersionMismatch)
	bad := &pb.CalendarSpec{Name: "broken", Entries: []*pb.CalendarEntry{{Date: "2026-02-30"}}}
	r = h.mustFail(putCalendarCmd(bad), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	if !strings.Contains(r.GetMessage(), "entries[0].date") {
		t.Fatalf("message %q does not name the entry", r.GetMessage())
	}
}

// A caller with a selector sees, writes and refers to only the calendars
// that carry its labels.
func TestCalendarsAreScoped(t *testing.T) {
	h := newHarness(t)
	billing := map[string]string{"team": "billing"}
	ops := rangeCal("ops-days", 0, 10)
	ops.Labels = map[string]string{"team": "ops"}
	h.mustOK(putCalendarCmd(ops))
	as := func(c *pb.Command) *pb.Command { c.Caller = &pb.Caller{Principal: "ci", Selector: billing}; return c }

	h.mustFail(as(putCalendarCmd(rangeCal("mine", 0, 10))), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid) // no labels
	taken := rangeCal("ops-days", 0, 20)
	taken.Labels = billing
	h.mustFail(as(putCalendarCmd(taken)), pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, fsm.ErrAlreadyExists)
	h.mustFail(as(deleteCalendarCmd("ops-days")), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	h.mustFail(as(createCmd(withCalendars(testSpec("report"), []string{"ops-days"}, nil))), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	mine := rangeCal("mine", 0, 10)
	mine.Labels = billing
	h.mustOK(as(putCalendarCmd(mine)))
	h.mustOK(as(createCmd(withCalendars(testSpec("report"), []string{"mine"}, nil))))
}

func TestFreezeSkipsTheSlotsOfTheJobsItMatches(t *testing.T) {
	h := newHarness(t)
	slot := h.now.Unix() + 600
	h.mustOK(createFreezeCmd(freezeOf("year-end", slot, slot+120, false, map[string]string{"team": "billing"})))
	billing := h.create(testSpec("billing"))
	otherSpec := testSpec("other")
	otherSpec.Labels = map[string]string{"team": "ops"}
	other := h.create(otherSpec)

	h.skipped(slotFire("billing", billing, slot), "freeze:year-end")
	h.accepted(slotFire("other", other, slot))
	h.accepted(slotFire("billing", billing, slot+120)) // [from, to): the end is outside

	h.mustFail(createFreezeCmd(freezeOf("year-end", slot, slot+10, false, nil)), pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, fsm.ErrAlreadyExists)
	h.mustFail(createFreezeCmd(freezeOf("backwards", slot, slot, false, nil)), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	h.mustOK(deleteFreezeCmd("year-end"))
	h.finishOpen("billing")
	h.accepted(slotFire("billing", billing, slot+200))
	h.mustFail(deleteFreezeCmd("year-end"), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
}

// A deferring freeze holds the latest slot inside it, records the ones
// before SKIPPED, and lets the held one fire once, as a catch-up, when no
// freeze is in force any more.
func TestDeferringFreezeFiresTheLastSlotWhenItLifts(t *testing.T) {
	h := newHarness(t)
	from := h.now.Unix() + 5
	h.mustOK(createFreezeCmd(freezeOf("deploy", from, from+30, true, nil)))
	gen := h.create(testSpec("sync"))

	r := h.fireOne(slotFire("sync", gen, from+1))
	if r.GetAccepted() || r.GetReason() != fsm.ReasonDeferred || r.GetRun() != nil || h.status("sync").GetDeferredSlotUnix() != from+1 {
		t.Fatalf("first slot in the freeze: %v, status %v; want it held", r, h.status("sync"))
	}
	h.fireOne(slotFire("sync", gen, from+2))
	st := h.status("sync")
	if st.GetDeferredSlotUnix() != from+2 || st.GetLastOutcome() != stSkipped {
		t.Fatalf("second slot: status %v; want it held and the first recorded SKIPPED", st)
	}
	if runs := h.f.ListRuns("sync", 0); len(runs) != 1 || runs[0].GetSlotUnix() != from+1 || runs[0].GetReason() != "freeze:deploy" {
		t.Fatalf("runs %v, want the first slot skipped for the freeze", runs)
	}

	release := &pb.Fire{Job: "sync", Generation: gen, SlotUnix: from + 2, Kind: kindCatchup}
	h.refused(release, fsm.ReasonFrozen) // still frozen at the entry's time
	for h.now.Unix() < from+30 {
		h.now = h.now.Add(10 * time.Second)
	}
	acc := h.accepted(release)
	if acc.GetRun().GetSlotUnix() != from+2 || acc.GetRun().GetKind() != kindCatchup || h.status("sync").GetDeferredSlotUnix() != 0 {
		t.Fatalf("release %v, status %v", acc, h.status("sync"))
	}
	h.refused(release, fsm.ReasonDuplicate) // once
}

func TestDeferringFreezeSkipsForCatchupPolicyNone(t *testing.T) {
	h := newHarness(t)
	from := h.now.Unix() + 5
	h.mustOK(createFreezeCmd(freezeOf("deploy", from, from+30, true, nil)))
	spec := testSpec("sync")
	spec.Catchup.Policy = pb.CatchupPolicy_CATCHUP_POLICY_NONE
	gen := h.create(spec)
	h.skipped(slotFire("sync", gen, from+1), "freeze:deploy")
}

// A freeze change names the jobs holding a deferred slot to the
// observer: their release may be due.
func TestFreezeChangesReplanHeldJobs(t *testing.T) {
	h := newHarness(t)
	obs := &recordingObserver{}
	h.f.SetObserver(obs)
	from := h.now.Unix() + 5
	h.mustOK(createFreezeCmd(freezeOf("deploy", from, from+300, true, nil)))
	gen := h.create(testSpec("sync"))
	h.create(testSpec("idle"))
	h.fireOne(slotFire("sync", gen, from+1))
	obs.jobs = nil
	h.mustOK(deleteFreezeCmd("deploy"))
	if len(obs.jobs) != 1 || obs.jobs[0] != "sync" {
		t.Fatalf("delete_freeze changed jobs %v, want [sync]", obs.jobs)
	}
}

type recordingObserver struct{ jobs []string }

func (o *recordingObserver) JobsChanged(_ fsm.Origin, names []string) {
	o.jobs = append(o.jobs, names...)
}
func (o *recordingObserver) RunsChanged(fsm.Origin, []*pb.Run) {}

// Calendars and freezes survive a snapshot; a user restore takes the
// calendars from its file, with the jobs, and keeps the live freezes.
func TestCalendarsAndFreezesInSnapshots(t *testing.T) {
	h := newHarness(t)
	h.mustOK(&pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 50}}})
	h.mustOK(putCalendarCmd(&pb.CalendarSpec{Name: "weekend", Timezone: "Europe/Berlin", Entries: []*pb.CalendarEntry{{Days: []string{"sat", "sun"}}}}))
	h.create(withCalendars(testSpec("report"), []string{"weekend"}, nil))
	h.mustOK(createFreezeCmd(freezeOf("old", 100, 200, false, nil)))
	file := persist(t, h.f)

	c := newHarness(t)
	if err := restore(c.f, file); err != nil {
		t.Fatal(err)
	}
	if c.f.StateHash() != h.f.StateHash() {
		t.Fatal("a restored state hashes differently")
	}
	c.mustFail(deleteCalendarCmd("weekend"), pb.ResultCode_RESULT_CODE_IN_USE, fsm.ErrInUse) // users rebuilt

	h.mustOK(deleteCmd("report", 0))
	h.mustOK(deleteCalendarCmd("weekend"))
	h.mustOK(putCalendarCmd(rangeCal("later", 0, 10)))
	h.mustOK(deleteFreezeCmd("old"))
	h.mustOK(createFreezeCmd(freezeOf("now", 300, 400, false, nil)))
	userRestore(t, h.f, file, fsm.RestoreRecord{})
	var cals []string
	for _, cal := range h.f.ListCalendars() {
		cals = append(cals, cal.GetSpec().GetName())
	}
	freezes := h.f.Freezes()
	if strings.Join(cals, ",") != "weekend" || len(freezes) != 1 || freezes[0].GetName() != "now" {
		t.Fatalf("after the user restore: calendars %v, freezes %v; want the file's calendars and the live freezes", cals, freezes)
	}
	if _, users, err := h.f.Calendar("weekend"); err != nil || len(users) != 1 || users[0] != "report" {
		t.Fatalf("calendar weekend: users %v (%v), want [report]", users, err)
	}
}

func TestCalendarAndFreezeWritesAreAudited(t *testing.T) {
	h := newHarness(t)
	h.mustOK(&pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 50}}})
	h.mustOK(putCalendarCmd(rangeCal("holidays", 0, 10)))
	spec := rangeCal("holidays", 0, 10)
	spec.Description = "public holidays"
	spec.Entries = append(spec.Entries, &pb.CalendarEntry{Date: "2026-12-25"})
	h.mustOK(putCalendarCmd(spec))
	h.mustOK(deleteCalendarCmd("holidays"))
	h.mustOK(createFreezeCmd(freezeOf("year-end", 100, 200, true, map[string]string{"team": "billing"})))
	h.mustOK(deleteFreezeCmd("year-end"))
	recs := h.f.ListAudit(fsm.AuditQuery{})
	var got []string
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		var changes []string
		for _, c := range r.GetChanges() {
			changes = append(changes, c.GetField()+"="+c.GetBefore()+">"+c.GetAfter())
		}
		got = append(got, r.GetAction()+" "+r.GetCalendar()+r.GetFreeze()+" "+strings.Join(changes, " "))
	}
	want := []string{
		"audit_limit  limit=0>50",
		`calendar_create holidays name=>"holidays" entries=>1 entries`,
		`calendar_update holidays description="">"public holidays" entries=1 entries>2 entries`,
		`calendar_delete holidays name="holidays"> description="public holidays"> entries=2 entries>`,
		`freeze_create year-end freeze.name=>"year-end" freeze.from=>"1970-01-01T00:01:40Z" freeze.to=>"1970-01-01T00:03:20Z" freeze.selector.team=>"billing" freeze.defer=>true freeze.created_at=>"2026-11-22T01:02:09Z"`,
		`freeze_delete year-end freeze.name="year-end"> freeze.from="1970-01-01T00:01:40Z"> freeze.to="1970-01-01T00:03:20Z"> freeze.selector.team="billing"> freeze.defer=true> freeze.created_at="2026-11-22T01:02:09Z">`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
