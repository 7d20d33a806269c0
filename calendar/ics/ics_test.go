package ics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/raftcron/raftcron/calendar"
	"github.com/raftcron/raftcron/calendar/ics"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// file is an iCalendar file with CRLF line ends, as RFC 5545 writes them.
func file(events ...string) string {
	lines := []string{"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//raftcron//test//EN", "X-WR-TIMEZONE:Europe/Berlin"}
	for _, e := range events {
		lines = append(lines, "BEGIN:VEVENT")
		lines = append(lines, strings.Split(strings.TrimSpace(e), "\n")...)
		lines = append(lines, "END:VEVENT")
	}
	lines = append(lines, "END:VCALENDAR", "")
	return strings.Join(lines, "\r\n")
}

var window2026 = ics.Window{
	From:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	Until: time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC),
}

func entries(t *testing.T, zone, text string) ics.Result {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := ics.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	res, err := ics.Entries(cal, loc, window2026)
	if err != nil {
		t.Fatalf("entries: %v", err)
	}
	return res
}

func want(t *testing.T, got []*pb.CalendarEntry, want ...*pb.CalendarEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if prototext.Format(got[i]) != prototext.Format(want[i]) {
			t.Errorf("entry %d: got {%v}, want {%v}", i, got[i], want[i])
		}
	}
}

func TestAllDayEventsAreDatesWithAnExclusiveEnd(t *testing.T) {
	res := entries(t, "America/New_York", file(`
UID:xmas
DTSTART;VALUE=DATE:20261225
DTEND;VALUE=DATE:20261226
SUMMARY:Christmas Day`, `
UID:shutdown
DTSTART;VALUE=DATE:20261228
DTEND;VALUE=DATE:20270102
SUMMARY:Year-end shutdown`, `
UID:nodtend
DTSTART;VALUE=DATE:20260704
SUMMARY:Independence Day`))
	want(t, res.Entries,
		&pb.CalendarEntry{Date: "2026-12-25", Note: "Christmas Day"},
		&pb.CalendarEntry{From: "2026-12-28", To: "2027-01-02", Note: "Year-end shutdown"},
		&pb.CalendarEntry{Date: "2026-07-04", Note: "Independence Day"},
	)
	if res.Events != 3 || res.Zone != "Europe/Berlin" {
		t.Fatalf("events %d, zone %q", res.Events, res.Zone)
	}
}

// A weekly meeting at 09:00 Berlin time stays at 09:00 across the change
// to summer time: 08:00Z before, 07:00Z after; EXDATE removes one
// occurrence, and an event with RECURRENCE-ID moves another.
func TestRecurringTimedEventKeepsItsWallTimeAcrossDST(t *testing.T) {
	res := entries(t, "UTC", file(`
UID:standup
DTSTART;TZID=Europe/Berlin:20260319T090000
DTEND;TZID=Europe/Berlin:20260319T093000
RRULE:FREQ=WEEKLY;COUNT=4
EXDATE;TZID=Europe/Berlin:20260402T090000
SUMMARY:Standup`, `
UID:standup
RECURRENCE-ID;TZID=Europe/Berlin:20260409T090000
DTSTART;TZID=Europe/Berlin:20260409T110000
DTEND;TZID=Europe/Berlin:20260409T113000
SUMMARY:Standup (moved)`))
	want(t, res.Entries,
		&pb.CalendarEntry{From: "2026-03-19T08:00:00Z", To: "2026-03-19T08:30:00Z", Note: "Standup"},
		&pb.CalendarEntry{From: "2026-03-26T08:00:00Z", To: "2026-03-26T08:30:00Z", Note: "Standup"},
		// 2026-04-02 excluded; 2026-04-09 moved to 11:00 CEST
		&pb.CalendarEntry{From: "2026-04-09T09:00:00Z", To: "2026-04-09T09:30:00Z", Note: "Standup (moved)"},
	)
}

// A yearly all-day holiday recurs until the window's end, with an EXDATE
// list; its UNTIL is a date in the calendar's zone.
func TestYearlyHolidayExpandsToTheWindow(t *testing.T) {
	res := entries(t, "America/New_York", file(`
UID:new-year
DTSTART;VALUE=DATE:20200101
RRULE:FREQ=YEARLY
SUMMARY:New Year's Day`, `
UID:payday
DTSTART;VALUE=DATE:20260130
RRULE:FREQ=MONTHLY;BYMONTHDAY=-1;UNTIL=20260430
EXDATE;VALUE=DATE:20260228,20260331
SUMMARY:Month end`))
	want(t, res.Entries,
		&pb.CalendarEntry{Date: "2026-01-01", Note: "New Year's Day"},
		&pb.CalendarEntry{Date: "2027-01-01", Note: "New Year's Day"},
		&pb.CalendarEntry{Date: "2026-01-31", Note: "Month end"},
		&pb.CalendarEntry{Date: "2026-04-30", Note: "Month end"},
	)
}

func TestCancelledAndInstantEventsAddNothing(t *testing.T) {
	res := entries(t, "UTC", file(`
UID:a
DTSTART:20260601T100000Z
DTEND:20260601T110000Z
STATUS:CANCELLED`, `
UID:b
DTSTART:20260601T100000Z`))
	want(t, res.Entries)
}

// The imported entries compile: the New York calendar holds the whole
// local day of an all-day event.
func TestImportedEntriesCompile(t *testing.T) {
	res := entries(t, "America/New_York", file(`
UID:xmas
DTSTART;VALUE=DATE:20261225
SUMMARY:Christmas Day`))
	loc, _ := time.LoadLocation("America/New_York")
	set, err := calendar.Compile(&pb.CalendarSpec{Entries: res.Entries}, calendar.Offsets(loc))
	if err != nil {
		t.Fatal(err)
	}
	in := time.Date(2026, 12, 25, 23, 59, 0, 0, loc)
	out := time.Date(2026, 12, 26, 0, 0, 0, 0, loc)
	if !set.Contains(in.Unix()) || set.Contains(out.Unix()) {
		t.Fatal("the imported date is not the whole day in New York")
	}
}

func TestBadFilesAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		want string
	}{
		"not ics":      {"hello\r\n", "not a valid iCalendar file"},
		"no end":       {"BEGIN:VCALENDAR\r\nVERSION:2.0\r\n", "not a valid iCalendar file"},
		"bad rrule":    {file("UID:x\nDTSTART:20260101T000000Z\nDTEND:20260101T010000Z\nRRULE:FREQ=SOMETIMES"), "RRULE"},
		"unknown zone": {file("UID:x\nDTSTART;TZID=Mars/Olympus:20260101T000000\nDTEND;TZID=Mars/Olympus:20260101T010000"), "DTSTART"},
		"backwards":    {file("UID:x\nDTSTART:20260102T000000Z\nDTEND:20260101T000000Z\nSUMMARY:oops"), `event 1 ("oops"): ends`},
		"too many":     {file("UID:x\nDTSTART:20260101T000000Z\nDTEND:20260101T000001Z\nRRULE:FREQ=MINUTELY"), "more than 10000"},
	} {
		t.Run(name, func(t *testing.T) {
			cal, err := ics.Parse(strings.NewReader(tc.text))
			if err == nil {
				_, err = ics.Entries(cal, time.UTC, window2026)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(tc.want, "iCalendar") && !errors.Is(err, ics.ErrSyntax) {
				t.Fatalf("%v is not ErrSyntax", err)
			}
		})
	}
}
