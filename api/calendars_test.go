package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// wantField fails unless err is InvalidArgument naming field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	if fields := badRequestFields(t, wantCode(t, err, codes.InvalidArgument)); !slices.Contains(fields, field) {
		t.Fatalf("%v names the fields %v, not %q", err, fields, field)
	}
}

func holidays(name string, labels map[string]string) *pb.CalendarSpec {
	return &pb.CalendarSpec{Name: name, Timezone: "America/New_York", Labels: labels, Entries: []*pb.CalendarEntry{
		{Date: "2026-07-04", Note: "Independence Day"}, {Days: []string{"sat", "sun"}},
	}}
}

func TestCalendarsAndFreezesNeedTheirRoles(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := with(ctx, h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil))
	write := with(ctx, h.token(t, mgmt, "ci", pb.AclRole_ACL_ROLE_WRITE, nil))
	worker := with(ctx, h.token(t, mgmt, "w", pb.AclRole_ACL_ROLE_WORKER, nil))
	fr := &pb.Freeze{Name: "year-end", From: timestamppb.New(testNow), To: timestamppb.New(testNow.Add(time.Hour))}

	_, err := h.cals.ApplyCalendar(read, &pb.ApplyCalendarRequest{Spec: holidays("us", nil)})
	wantCode(t, err, codes.PermissionDenied)
	_, err = h.cals.ImportCalendar(read, &pb.ImportCalendarRequest{Name: "us", Ics: "x"})
	wantCode(t, err, codes.PermissionDenied)
	_, err = h.frz.CreateFreeze(read, &pb.CreateFreezeRequest{Freeze: fr})
	wantCode(t, err, codes.PermissionDenied)
	_, err = h.cals.ListCalendars(worker, &pb.ListCalendarsRequest{})
	wantCode(t, err, codes.PermissionDenied)

	if _, err := h.cals.ApplyCalendar(write, &pb.ApplyCalendarRequest{Spec: holidays("us", nil)}); err != nil {
		t.Fatalf("write ApplyCalendar: %v", err)
	}
	if _, err := h.frz.CreateFreeze(write, &pb.CreateFreezeRequest{Freeze: fr}); err != nil {
		t.Fatalf("write CreateFreeze: %v", err)
	}
	got, err := h.cals.GetCalendar(read, &pb.GetCalendarRequest{Name: "us"})
	if err != nil || len(got.GetCalendar().GetSpec().GetEntries()) != 2 || got.GetCalendar().GetZone() != nil {
		t.Fatalf("read GetCalendar: %v, %v; want the entries and no zone offsets", got, err)
	}
	if l, err := h.frz.ListFreezes(read, &pb.ListFreezesRequest{}); err != nil || len(l.GetFreezes()) != 1 {
		t.Fatalf("read ListFreezes: %v, %v", l, err)
	}
	_, err = h.frz.DeleteFreeze(read, &pb.DeleteFreezeRequest{Name: "year-end"})
	wantCode(t, err, codes.PermissionDenied)
	_, err = h.cals.DeleteCalendar(read, &pb.DeleteCalendarRequest{Name: "us"})
	wantCode(t, err, codes.PermissionDenied)
	if _, err := h.frz.DeleteFreeze(write, &pb.DeleteFreezeRequest{Name: "year-end"}); err != nil {
		t.Fatalf("write DeleteFreeze: %v", err)
	}
	if _, err := h.cals.DeleteCalendar(write, &pb.DeleteCalendarRequest{Name: "us"}); err != nil {
		t.Fatalf("write DeleteCalendar: %v", err)
	}
}

// A token with a selector sees and refers to only the calendars carrying
// its labels, and freezes only jobs it sees.
func TestScopedTokenAndCalendarsAndFreezes(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	billing := map[string]string{"team": "billing"}
	scoped := with(ctx, h.token(t, mgmt, "billing-ci", pb.AclRole_ACL_ROLE_WRITE, billing))
	if _, err := h.cals.ApplyCalendar(admin, &pb.ApplyCalendarRequest{Spec: holidays("ops-days", map[string]string{"team": "ops"})}); err != nil {
		t.Fatal(err)
	}

	_, err := h.cals.ApplyCalendar(scoped, &pb.ApplyCalendarRequest{Spec: holidays("mine", nil)})
	wantCode(t, err, codes.PermissionDenied)
	_, errHidden := h.cals.GetCalendar(scoped, &pb.GetCalendarRequest{Name: "ops-days"})
	_, errMissing := h.cals.GetCalendar(scoped, &pb.GetCalendarRequest{Name: "nosuch"})
	if status.Code(errHidden) != codes.NotFound || strings.Replace(status.Convert(errMissing).Message(), "nosuch", "ops-days", 1) != status.Convert(errHidden).Message() {
		t.Fatalf("a hidden calendar answers %v, a missing one %v", errHidden, errMissing)
	}
	_, err = h.jobs.CreateJob(scoped, &pb.CreateJobRequest{Spec: withCalendarRefs(labelled("report", billing), []string{"ops-days"})})
	wantField(t, err, "calendars.exclude[0]")
	if _, err := h.cals.ApplyCalendar(scoped, &pb.ApplyCalendarRequest{Spec: holidays("mine", billing)}); err != nil {
		t.Fatal(err)
	}
	if l, _ := h.cals.ListCalendars(scoped, &pb.ListCalendarsRequest{}); len(l.GetCalendars()) != 1 || l.GetCalendars()[0].GetSpec().GetName() != "mine" {
		t.Fatalf("scoped ListCalendars: %v", l)
	}

	at := func(name string, sel map[string]string) *pb.CreateFreezeRequest {
		return &pb.CreateFreezeRequest{Freeze: &pb.Freeze{Name: name, Selector: sel,
			From: timestamppb.New(testNow), To: timestamppb.New(testNow.Add(time.Hour))}}
	}
	_, err = h.frz.CreateFreeze(scoped, at("all", nil))
	wantCode(t, err, codes.PermissionDenied)
	if _, err := h.frz.CreateFreeze(scoped, at("billing-prod", map[string]string{"team": "billing", "env": "prod"})); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*pb.CreateFreezeRequest{at("everything", nil), at("ops", map[string]string{"team": "ops"})} {
		if _, err := h.frz.CreateFreeze(admin, req); err != nil {
			t.Fatal(err)
		}
	}
	l, err := h.frz.ListFreezes(scoped, &pb.ListFreezesRequest{})
	var names []string
	for _, fr := range l.GetFreezes() {
		names = append(names, fr.GetName())
	}
	if err != nil || strings.Join(names, ",") != "billing-prod,everything" {
		t.Fatalf("scoped ListFreezes: %v (%v); want the freezes that may match its jobs", names, err)
	}
	_, err = h.frz.DeleteFreeze(scoped, &pb.DeleteFreezeRequest{Name: "everything"})
	wantCode(t, err, codes.NotFound)
}

func withCalendarRefs(spec *pb.JobSpec, exclude []string) *pb.JobSpec {
	spec.Calendars = &pb.CalendarRefs{Exclude: exclude}
	return spec
}

func TestCalendarBadInputIsRefusedNamingTheField(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	_, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: withCalendarRefs(validSpec("report"), []string{"nope"})})
	wantField(t, err, "calendars.exclude[0]")
	if !strings.Contains(err.Error(), `calendar "nope" not found`) {
		t.Fatalf("%v does not name the calendar", err)
	}
	_, err = h.cals.ApplyCalendar(ctx, &pb.ApplyCalendarRequest{Spec: &pb.CalendarSpec{Name: "x", Entries: []*pb.CalendarEntry{{From: "2026-12-27", To: "2026-12-24"}}}})
	wantField(t, err, "entries[0].to")
	_, err = h.cals.ApplyCalendar(ctx, &pb.ApplyCalendarRequest{Name: "a", Spec: &pb.CalendarSpec{Name: "b"}})
	wantField(t, err, "spec.name")
	_, err = h.cals.ImportCalendar(ctx, &pb.ImportCalendarRequest{Name: "us", Ics: "BEGIN:VCALENDAR\r\nno end"})
	wantField(t, err, "ics")
	_, err = h.frz.CreateFreeze(ctx, &pb.CreateFreezeRequest{Freeze: &pb.Freeze{Name: "f",
		From: timestamppb.New(testNow.Add(2 * time.Hour)), To: timestamppb.New(testNow.Add(time.Hour))}})
	wantField(t, err, "to")
	if l, _ := h.cals.ListCalendars(ctx, &pb.ListCalendarsRequest{}); len(l.GetCalendars()) != 0 {
		t.Fatal("a refused write stored a calendar")
	}
}

func TestDeleteCalendarInUseNamesTheJobs(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	if _, err := h.cals.ApplyCalendar(ctx, &pb.ApplyCalendarRequest{Name: "us", Spec: holidays("", nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: withCalendarRefs(validSpec("report"), []string{"us"})}); err != nil {
		t.Fatal(err)
	}
	_, err := h.cals.DeleteCalendar(ctx, &pb.DeleteCalendarRequest{Name: "us"})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), `job "report"`) {
		t.Fatalf("%v does not name the job", st.Message())
	}
	got, err := h.cals.GetCalendar(ctx, &pb.GetCalendarRequest{Name: "us"})
	if err != nil || strings.Join(got.GetUsedBy(), ",") != "report" {
		t.Fatalf("GetCalendar: used by %v (%v)", got.GetUsedBy(), err)
	}
}

func TestImportCalendarExpandsTheFile(t *testing.T) {
	h := newACLHarness(t, false)
	ics := strings.Join([]string{"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//t//t//EN", "X-WR-TIMEZONE:America/New_York",
		"BEGIN:VEVENT", "UID:a", "DTSTART;VALUE=DATE:20260101", "RRULE:FREQ=YEARLY", "SUMMARY:New Year", "END:VEVENT",
		"END:VCALENDAR", ""}, "\r\n")
	resp, err := h.cals.ImportCalendar(testCtx(t), &pb.ImportCalendarRequest{Name: "us", Ics: ics})
	if err != nil {
		t.Fatal(err)
	}
	// testNow is in 2026: the window runs from 2025 through 2031, the event from 2026.
	cal := resp.GetCalendar()
	if resp.GetEvents() != 1 || resp.GetEntries() != 6 || cal.GetSpec().GetTimezone() != "America/New_York" ||
		cal.GetSpec().GetEntries()[0].GetDate() != "2026-01-01" || resp.GetExpandedUntil().AsTime().Year() != 2032 {
		t.Fatalf("import: %v", resp)
	}
}

// A preview marks each slot a calendar or a freeze stops, and the next
// fire time passes them.
func TestPreviewMarksStoppedSlots(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	// testNow is Monday 2026-06-01 12:00 UTC; the job fires daily at 09:00 UTC.
	if _, err := h.cals.ApplyCalendar(ctx, &pb.ApplyCalendarRequest{Spec: &pb.CalendarSpec{Name: "midweek", Entries: []*pb.CalendarEntry{{Days: []string{"wed"}}}}}); err != nil {
		t.Fatal(err)
	}
	spec := validSpec("report")
	spec.Schedule = "0 9 * * *"
	spec.Calendars = &pb.CalendarRefs{Exclude: []string{"midweek"}}
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.frz.CreateFreeze(ctx, &pb.CreateFreezeRequest{Freeze: &pb.Freeze{Name: "deploy",
		From: timestamppb.New(testNow), To: timestamppb.New(testNow.Add(24 * time.Hour))}}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.jobs.PreviewSchedule(ctx, &pb.PreviewScheduleRequest{Name: "report", Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range resp.GetSlots() {
		got = append(got, s.GetTime().AsTime().Format("01-02")+" "+s.GetSkipped())
	}
	if want := "06-02 freeze:deploy,06-03 calendar:midweek,06-04 "; strings.Join(got, ",") != want {
		t.Fatalf("slots %q, want %q", strings.Join(got, ","), want)
	}
	job, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "report"})
	if err != nil || time.Unix(job.GetJob().GetStatus().GetNextFireUnix(), 0).UTC().Format("01-02") != "06-04" {
		t.Fatalf("next fire %v (%v), want the first slot nothing stops", job.GetJob().GetStatus().GetNextFireUnix(), err)
	}
}
