package jobspec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// violated reports the fields of a *ValidationError as "field: rule" lines.
func violated(t *testing.T, err error) string {
	t.Helper()
	var ve *jobspec.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	var out []string
	for _, v := range ve.Violations {
		out = append(out, v.Field+": "+v.Rule)
	}
	return strings.Join(out, "\n")
}

func TestCalendarRefsAreNamesEachOnce(t *testing.T) {
	spec := &pb.JobSpec{Name: "report", Schedule: "@daily", Http: &pb.HttpTarget{Url: "http://x.test/"},
		Calendars: &pb.CalendarRefs{Exclude: []string{"Holidays", "weekend"}, Only: []string{"weekend"}}}
	got := violated(t, jobspec.Validate(spec, time.Now()))
	for _, want := range []string{"calendars.exclude[0]: a calendar name must match", `calendars.only[0]: calendar "weekend" is named twice`} {
		if !strings.Contains(got, want) {
			t.Errorf("violations:\n%s\nwant %q", got, want)
		}
	}
	empty := &pb.JobSpec{Calendars: &pb.CalendarRefs{}}
	jobspec.Normalize(empty)
	if empty.Calendars != nil {
		t.Fatal("calendars naming none is kept")
	}
}

func TestValidateCalendarNamesEachBrokenField(t *testing.T) {
	spec := &pb.CalendarSpec{Name: "Holidays", Timezone: "Mars/Olympus", Entries: []*pb.CalendarEntry{
		{Date: "2026-12-25"}, {Days: []string{"SAT"}, Between: "25:00-26:00"},
	}}
	got := violated(t, func() error { _, err := jobspec.ValidateCalendar(spec); return err }())
	for _, want := range []string{"name: must match", "timezone: unknown time zone", "entries[1].between: "} {
		if !strings.Contains(got, want) {
			t.Errorf("violations:\n%s\nwant %q", got, want)
		}
	}
	if spec.Entries[1].Days[0] != "sat" {
		t.Fatalf("days not normalized: %v", spec.Entries[1].Days)
	}
	ok := &pb.CalendarSpec{Name: "holidays", Timezone: " Europe/Berlin ", Entries: []*pb.CalendarEntry{{Date: "2026-12-25"}}}
	zone, err := jobspec.ValidateCalendar(ok)
	if err != nil || len(zone.GetTransitionsUnix()) == 0 || ok.Timezone != "Europe/Berlin" {
		t.Fatalf("ValidateCalendar: zone %v, %v", zone, err)
	}
}

func TestValidateFreeze(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(d)) }
	for _, tc := range []struct {
		fr   *pb.Freeze
		want string
	}{
		{&pb.Freeze{Name: "x", From: at(time.Hour), To: at(time.Minute)}, "to: 2026-12-01T00:01:00Z must be after from"},
		{&pb.Freeze{Name: "x", From: at(-2 * time.Hour), To: at(-time.Hour)}, "to: 2026-11-30T23:00:00Z has passed"},
		{&pb.Freeze{Name: "x", To: at(time.Hour)}, "from: required"},
		{&pb.Freeze{Name: "x", From: at(0), To: at(time.Hour), Selector: map[string]string{"Bad Key": "v"}}, "selector: key"},
	} {
		got := violated(t, jobspec.ValidateFreeze(tc.fr, now))
		if !strings.Contains(got, tc.want) {
			t.Errorf("%v: violations\n%s\nwant %q", tc.fr, got, tc.want)
		}
	}
	if err := jobspec.ValidateFreeze(&pb.Freeze{Name: "ok", From: at(-time.Hour), To: at(time.Hour)}, now); err != nil {
		t.Fatalf("a freeze in force now: %v", err)
	}
}
