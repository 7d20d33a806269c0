package calendar_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/calendar"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// compile builds the Set of entries in zone, with the zone's offsets read
// as a node reads them for a write.
func compile(t *testing.T, zone string, entries ...*pb.CalendarEntry) *calendar.Set {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	s, err := calendar.Compile(&pb.CalendarSpec{Timezone: zone, Entries: entries}, calendar.Offsets(loc))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

func date(d string) *pb.CalendarEntry        { return &pb.CalendarEntry{Date: d} }
func span(from, to string) *pb.CalendarEntry { return &pb.CalendarEntry{From: from, To: to} }
func weekly(between string, days ...string) *pb.CalendarEntry {
	return &pb.CalendarEntry{Days: days, Between: between}
}

// vector: whether the calendar contains an instant.
type vector struct {
	at   string // RFC 3339
	want bool
}

func check(t *testing.T, s *calendar.Set, vectors []vector) {
	t.Helper()
	for _, v := range vectors {
		at, err := time.Parse(time.RFC3339, v.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Contains(at.Unix()); got != v.want {
			t.Errorf("Contains(%s) = %v, want %v", v.at, got, v.want)
		}
	}
}

// A date is the whole day in the calendar's zone: 23 hours on the day the
// clock goes forward, 25 on the day it goes back.
func TestDateIsTheWholeDayInItsZone(t *testing.T) {
	t.Run("Berlin spring forward", func(t *testing.T) {
		check(t, compile(t, "Europe/Berlin", date("2026-03-29")), []vector{
			{"2026-03-28T22:59:59Z", false},
			{"2026-03-28T23:00:00Z", true}, // 00:00 CET
			{"2026-03-29T01:00:00Z", true}, // 03:00 CEST, the hour after the gap
			{"2026-03-29T21:59:59Z", true}, // 23:59:59 CEST
			{"2026-03-29T22:00:00Z", false},
		})
	})
	t.Run("Berlin fall back", func(t *testing.T) {
		check(t, compile(t, "Europe/Berlin", date("2026-10-25")), []vector{
			{"2026-10-24T21:59:59Z", false},
			{"2026-10-24T22:00:00Z", true}, // 00:00 CEST
			{"2026-10-25T00:30:00Z", true}, // 02:30 CEST, first pass
			{"2026-10-25T01:30:00Z", true}, // 02:30 CET, second pass
			{"2026-10-25T22:59:59Z", true}, // 23:59:59 CET
			{"2026-10-25T23:00:00Z", false},
		})
	})
	t.Run("New York", func(t *testing.T) {
		check(t, compile(t, "America/New_York", date("2026-03-08"), date("2026-11-01")), []vector{
			{"2026-03-08T04:59:59Z", false},
			{"2026-03-08T05:00:00Z", true}, // 00:00 EST
			{"2026-03-09T03:59:59Z", true}, // 23:59:59 EDT
			{"2026-03-09T04:00:00Z", false},
			{"2026-11-01T03:59:59Z", false},
			{"2026-11-01T04:00:00Z", true}, // 00:00 EDT
			{"2026-11-02T04:59:59Z", true}, // 23:59:59 EST
			{"2026-11-02T05:00:00Z", false},
		})
	})
	t.Run("Lord Howe", func(t *testing.T) {
		// Half-hour daylight saving time: +10:30 in winter, +11 in summer.
		check(t, compile(t, "Australia/Lord_Howe", date("2026-10-04")), []vector{
			{"2026-10-03T13:29:59Z", false},
			{"2026-10-03T13:30:00Z", true}, // 00:00 +10:30
			{"2026-10-04T12:59:59Z", true}, // 23:59:59 +11
			{"2026-10-04T13:00:00Z", false},
		})
	})
}

// A weekly window is wall time: it holds both passes of an hour the clock
// repeats and nothing of an hour it skips.
func TestWeeklyWindowFollowsWallTimeAcrossDST(t *testing.T) {
	t.Run("Lord Howe repeats 01:30-02:00", func(t *testing.T) {
		check(t, compile(t, "Australia/Lord_Howe", weekly("01:30-02:00", "sun")), []vector{
			{"2026-04-04T14:29:59Z", false},
			{"2026-04-04T14:45:00Z", true},  // 01:45 +11, first pass
			{"2026-04-04T15:15:00Z", true},  // 01:45 +10:30, second pass
			{"2026-04-04T15:30:00Z", false}, // 02:00 +10:30
		})
	})
	t.Run("Lord Howe skips 02:00-02:30", func(t *testing.T) {
		check(t, compile(t, "Australia/Lord_Howe", weekly("02:00-02:30", "sun")), []vector{
			{"2026-10-03T15:29:59Z", false}, // 01:59:59 +10:30
			{"2026-10-03T15:30:00Z", false}, // 02:30 +11: the window never came
			{"2027-01-02T15:15:00Z", true},  // 02:15 +11 a Sunday later in summer
		})
	})
	t.Run("New York 02:00-03:00 on the night it is skipped", func(t *testing.T) {
		check(t, compile(t, "America/New_York", weekly("02:00-03:00", "sun")), []vector{
			{"2026-03-08T06:59:59Z", false}, // 01:59:59 EST
			{"2026-03-08T07:00:00Z", false}, // 03:00 EDT
			{"2026-03-15T06:30:00Z", true},  // 02:30 EDT a week later
			{"2026-11-01T06:30:00Z", false}, // 01:30 EST
		})
	})
}

func TestWindowCrossingMidnight(t *testing.T) {
	s := compile(t, "Europe/Berlin", weekly("18:00-06:00", "fri"))
	check(t, s, []vector{
		{"2026-12-03T22:00:00Z", false}, // Thu 23:00
		{"2026-12-04T16:59:59Z", false}, // Fri 17:59:59
		{"2026-12-04T17:00:00Z", true},  // Fri 18:00
		{"2026-12-04T23:00:00Z", true},  // Sat 00:00
		{"2026-12-05T04:59:59Z", true},  // Sat 05:59:59
		{"2026-12-05T05:00:00Z", false}, // Sat 06:00
		{"2026-12-05T17:00:00Z", false}, // Sat 18:00: the window is Friday's
	})
	// Across the night the clock goes back (Sat 2026-10-24 → Sun): a
	// window starting Saturday runs through both passes of 02:00.
	night := compile(t, "Europe/Berlin", weekly("22:00-03:00", "sat"))
	check(t, night, []vector{
		{"2026-10-24T19:59:59Z", false}, // Sat 21:59:59 CEST
		{"2026-10-24T20:00:00Z", true},  // Sat 22:00 CEST
		{"2026-10-25T00:30:00Z", true},  // 02:30 CEST
		{"2026-10-25T01:59:59Z", true},  // 02:59:59 CET
		{"2026-10-25T02:00:00Z", false}, // 03:00 CET
	})
}

func TestDaysAndRangesOfDays(t *testing.T) {
	s := compile(t, "UTC", weekly("", "sat", "sun"), weekly("09:00-10:00", "mon-wed"), weekly("12:00-24:00", "fri-sat"))
	check(t, s, []vector{
		{"2026-12-05T00:00:00Z", true},  // Sat
		{"2026-12-06T23:59:59Z", true},  // Sun
		{"2026-12-07T00:00:00Z", false}, // Mon
		{"2026-12-07T09:30:00Z", true},  // Mon 09:30
		{"2026-12-09T09:30:00Z", true},  // Wed
		{"2026-12-10T09:30:00Z", false}, // Thu
		{"2026-12-11T12:00:00Z", true},  // Fri noon
		{"2026-12-11T11:59:59Z", false},
	})
	wrap := compile(t, "UTC", weekly("", "fri-mon"))
	check(t, wrap, []vector{
		{"2026-12-07T12:00:00Z", true},  // Mon
		{"2026-12-08T12:00:00Z", false}, // Tue
		{"2026-12-11T12:00:00Z", true},  // Fri
	})
}

func TestRanges(t *testing.T) {
	s := compile(t, "Europe/Berlin",
		span("2026-12-24", "2026-12-27"),                     // three whole days
		span("2027-01-05T10:00:00Z", "2027-01-05T11:00:00Z"), // an hour, absolute
		span("2026-03-29T02:30", "2026-03-29T04:00"),         // starts in the gap: at the transition
		span("2026-06-01T08:00:00.5Z", "2026-06-01T08:00:02.5Z"),
	)
	check(t, s, []vector{
		{"2026-12-23T22:59:59Z", false},
		{"2026-12-23T23:00:00Z", true},
		{"2026-12-26T22:59:59Z", true},
		{"2026-12-26T23:00:00Z", false}, // to is exclusive: 2026-12-27 00:00
		{"2027-01-05T09:59:59Z", false},
		{"2027-01-05T10:00:00Z", true},
		{"2027-01-05T11:00:00Z", false},
		{"2026-03-29T00:59:59Z", false},
		{"2026-03-29T01:00:00Z", true}, // 03:00 CEST: the gap's end
		{"2026-03-29T01:59:59Z", true},
		{"2026-03-29T02:00:00Z", false}, // 04:00 CEST
		{"2026-06-01T08:00:00Z", false}, // a fraction rounds up: whole seconds [08:00:01, 08:00:03)
		{"2026-06-01T08:00:01Z", true},
		{"2026-06-01T08:00:02Z", true},
		{"2026-06-01T08:00:03Z", false},
	})
}

func TestEmptyAndNilSetsContainNothing(t *testing.T) {
	var nilSet *calendar.Set
	if nilSet.Contains(0) || compile(t, "UTC").Contains(1_800_000_000) {
		t.Fatal("an empty calendar contains an instant")
	}
}

func TestBadEntriesAreRefusedNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		entry *pb.CalendarEntry
		field string
		rule  string
	}{
		{date("2026-13-01"), "entries[0].date", "not a date"},
		{date("1969-12-31"), "entries[0].date", "outside the years"},
		{span("2026-12-27", "2026-12-24"), "entries[0].to", "must be after from"},
		{span("2026-12-27", ""), "entries[0]", "needs both from and to"},
		{span("tomorrow", "2026-12-24"), "entries[0].from", "neither an RFC 3339 time"},
		{&pb.CalendarEntry{Date: "2026-12-25", Days: []string{"sat"}}, "entries[0]", "exactly one of"},
		{&pb.CalendarEntry{}, "entries[0]", "exactly one of"},
		{&pb.CalendarEntry{Date: "2026-12-25", Between: "09:00-10:00"}, "entries[0].between", "only with days"},
		{weekly("", "saturday"), "entries[0].days[0]", "not a day"},
		{weekly("9-17", "mon"), "entries[0].between", "not HH:MM-HH:MM"},
		{weekly("24:00-06:00", "mon"), "entries[0].between", "not HH:MM-HH:MM"},
		{weekly("09:00-09:00", "mon"), "entries[0].between", "the same time"},
		{&pb.CalendarEntry{Date: "2026-12-25", Note: strings.Repeat("x", 257)}, "entries[0].note", "at most 256"},
	} {
		_, err := calendar.Compile(&pb.CalendarSpec{Entries: []*pb.CalendarEntry{tc.entry}}, nil)
		var errs calendar.Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Errorf("%v: want a field error, got %v", tc.entry, err)
			continue
		}
		if errs[0].Field != tc.field || !strings.Contains(errs[0].Rule, tc.rule) {
			t.Errorf("%v: got %q: %q, want %q: …%s…", tc.entry, errs[0].Field, errs[0].Rule, tc.field, tc.rule)
		}
	}
}

func TestBrokenZoneIsRefused(t *testing.T) {
	for _, z := range []*pb.ZoneOffsets{
		{TransitionsUnix: []int64{10}, OffsetsSeconds: []int32{0}},
		{TransitionsUnix: []int64{10, 5}, OffsetsSeconds: []int32{0, 3600, 0}},
		{OffsetsSeconds: []int32{20 * 3600}},
	} {
		if _, err := calendar.Compile(&pb.CalendarSpec{}, z); err == nil {
			t.Errorf("zone %v accepted", z)
		}
	}
}

// The stored offsets reach past 2099 only by their last offset, and reach
// the zone's rules of years far ahead.
func TestOffsetsCoverTheCentury(t *testing.T) {
	loc, _ := time.LoadLocation("Europe/Berlin")
	z := calendar.Offsets(loc)
	if n := len(z.GetTransitionsUnix()); n < 200 || n > 300 {
		t.Fatalf("Berlin has %d transitions from 1970 to 2100, want about 2 a year since 1980", n)
	}
	if calendar.Offsets(time.UTC) != nil {
		t.Fatal("UTC needs no offsets")
	}
	s := compile(t, "Europe/Berlin", date("2090-07-01"))
	check(t, s, []vector{{"2090-06-30T21:59:59Z", false}, {"2090-06-30T22:00:00Z", true}})
}
