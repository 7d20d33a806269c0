package schedule

import (
	"testing"
	"time"
)

func TestNextTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, zone, after string
		want                    []string
	}{
		{"every second", "* * * * * *", "UTC", "2026-05-01T10:00:00.5Z",
			[]string{"2026-05-01T10:00:01Z", "2026-05-01T10:00:02Z", "2026-05-01T10:00:03Z"}},
		{"every 5 seconds with seconds field", "*/5 * * * * *", "UTC", "2026-05-01T10:00:03Z",
			[]string{"2026-05-01T10:00:05Z", "2026-05-01T10:00:10Z", "2026-05-01T10:00:15Z"}},
		{"seconds field across a minute", "50 59 * * * *", "UTC", "2026-05-01T10:59:50Z",
			[]string{"2026-05-01T11:59:50Z"}},
		{"five-field daily", "0 2 * * *", "UTC", "2026-05-01T03:00:00Z",
			[]string{"2026-05-02T02:00:00Z", "2026-05-03T02:00:00Z"}},
		{"five-field weekdays", "15 10 * * 1-5", "UTC", "2026-05-01T11:00:00Z", // Friday
			[]string{"2026-05-04T10:15:00Z", "2026-05-05T10:15:00Z"}},
		{"named month and weekday", "0 9 * jan mon", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2027-01-04T09:00:00Z", "2027-01-11T09:00:00Z"}},
		{"exact fire time is not after itself", "0 2 * * *", "UTC", "2026-05-01T02:00:00Z",
			[]string{"2026-05-02T02:00:00Z"}},
		{"@yearly", "@yearly", "UTC", "2026-05-01T10:20:00Z", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"@annually", "@annually", "UTC", "2026-05-01T10:20:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@monthly", "@monthly", "UTC", "2026-05-01T10:20:00Z", []string{"2026-06-01T00:00:00Z", "2026-07-01T00:00:00Z"}},
		{"@weekly is Sunday", "@weekly", "UTC", "2026-05-01T10:20:00Z", []string{"2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z"}},
		{"@daily", "@daily", "UTC", "2026-05-01T10:20:00Z", []string{"2026-05-02T00:00:00Z"}},
		{"@midnight", "@midnight", "UTC", "2026-05-01T10:20:00Z", []string{"2026-05-02T00:00:00Z"}},
		{"@hourly", "@hourly", "UTC", "2026-05-01T10:20:00Z", []string{"2026-05-01T11:00:00Z", "2026-05-01T12:00:00Z"}},
		{"descriptor in a zone", "@daily", "Asia/Tokyo", "2026-05-01T10:20:00Z", []string{"2026-05-01T15:00:00Z"}},
		{"Feb 29 waits for the next leap year", "0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"31st skips short months", "0 0 31 * *", "UTC", "2026-03-31T00:00:00Z",
			[]string{"2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{"dom and dow both restricted: either matches", "0 0 13 * 5", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2026-05-08T00:00:00Z", "2026-05-13T00:00:00Z", "2026-05-15T00:00:00Z"}},
		{"dom restricted, dow star: dom only", "0 0 13 * *", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2026-05-13T00:00:00Z", "2026-06-13T00:00:00Z"}},
		{"dow restricted, dom star: dow only", "0 0 * * 5", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2026-05-08T00:00:00Z", "2026-05-15T00:00:00Z"}},
		{"dom as explicit full range counts as restricted", "0 0 1-31 * 5", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z"}},
		{"dom */1 keeps the star", "0 0 */1 * 5", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2026-05-08T00:00:00Z"}},
		{"? counts as a star", "0 16 ? * sat", "UTC", "2026-05-01T00:00:00Z",
			[]string{"2026-05-02T16:00:00Z", "2026-05-09T16:00:00Z"}},
		{"zone without DST", "0 9 * * *", "Asia/Tokyo", "2026-04-30T12:00:00Z",
			[]string{"2026-05-01T00:00:00Z", "2026-05-02T00:00:00Z"}},
		{"year wrap", "0 0 1 1 *", "UTC", "2026-12-31T23:59:59Z", []string{"2027-01-01T00:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, mustLoc(t, tc.zone)), tc.after, tc.want)
		})
	}
}

// TestNextDayFieldStartingWithStar pins cronie's rule: a day field whose
// text starts with "*" is unrestricted whatever step follows, so the two
// day fields are ANDed; robfig keeps its star only for "*" and "*/1".
// Weekdays checked with date(1): in 2026 May 1 is a Friday, the Saturdays
// of May and June are 2, 9, 16, 23, 30 and 6, 13, 20, 27; the 13th is a
// Saturday in June, a Thursday in August, a Sunday in September and
// December and a Tuesday in October.
func TestNextDayFieldStartingWithStar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, after string
		want              []string
	}{
		{"dom */2 with a weekday: odd-numbered Saturdays", "0 16 */2 * sat", "2026-05-01T00:00:00Z",
			[]string{"2026-05-09T16:00:00Z", "2026-05-23T16:00:00Z", "2026-06-13T16:00:00Z", "2026-06-27T16:00:00Z"}},
		{"numeric weekday, same days", "0 16 */2 * 6", "2026-05-01T00:00:00Z",
			[]string{"2026-05-09T16:00:00Z", "2026-05-23T16:00:00Z"}},
		{"dow */2 with a day of month: the 13th on Sun, Tue, Thu or Sat", "0 0 13 * */2", "2026-02-01T00:00:00Z",
			[]string{"2026-06-13T00:00:00Z", "2026-08-13T00:00:00Z", "2026-09-13T00:00:00Z", "2026-10-13T00:00:00Z", "2026-12-13T00:00:00Z"}},
		{"the same odd days written as a range are restricted: either matches", "0 16 1-31/2 * sat", "2026-05-01T00:00:00Z",
			[]string{"2026-05-01T16:00:00Z", "2026-05-02T16:00:00Z", "2026-05-03T16:00:00Z", "2026-05-05T16:00:00Z"}},
		{"with a seconds field", "30 0 16 */2 * sat", "2026-05-01T00:00:00Z",
			[]string{"2026-05-09T16:00:30Z", "2026-05-23T16:00:30Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, time.UTC), tc.after, tc.want)
		})
	}
}

func TestNextReturnsTimeInScheduleZone(t *testing.T) {
	t.Parallel()
	berlin := mustLoc(t, "Europe/Berlin")
	next := mustParse(t, "0 2 * * *", berlin).Next(mustTime(t, "2026-05-01T12:00:00Z"))
	if next.Location() != berlin || next.Hour() != 2 {
		t.Fatalf("Next = %s in %s, want 02:00 in Europe/Berlin", next, next.Location())
	}
}

func TestNextImpossibleDateIsZero(t *testing.T) {
	t.Parallel()
	// Fixed and real-time specs, in a zone with transitions to cross.
	for _, spec := range []string{"0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "* * 30 2 *", "0 */2 31 4 *"} {
		for _, loc := range []*time.Location{time.UTC, mustLoc(t, "Europe/Berlin")} {
			if next := mustParse(t, spec, loc).Next(mustTime(t, "2026-05-01T00:00:00Z")); !next.IsZero() {
				t.Errorf("%q in %s: Next = %s, want zero", spec, loc, next)
			}
		}
	}
}

// TestNextSearchesFiveYears: Next looks through the end of the fifth year
// after the one it starts in, whether the spec follows the wall clock or
// real time. February 29 falls on a Sunday in 2032 (date(1)); "*/7" in the
// day-of-week field is Sunday alone, and a star, so both day fields apply.
func TestNextSearchesFiveYears(t *testing.T) {
	t.Parallel()
	berlin := mustLoc(t, "Europe/Berlin")
	for _, spec := range []string{"0 0 29 2 */7", "* * 29 2 */7"} {
		s := mustParse(t, spec, berlin)
		if next := s.Next(mustTime(t, "2026-05-01T00:00:00Z")); !next.IsZero() {
			t.Errorf("%q from 2026: Next = %s, want zero (2032 is past the search)", spec, next)
		}
		if next := s.Next(mustTime(t, "2027-05-01T00:00:00Z")); !next.Equal(mustTime(t, "2032-02-28T23:00:00Z")) {
			t.Errorf("%q from 2027: Next = %s, want 2032-02-29 00:00 CET", spec, next)
		}
	}
}

func TestNilLocationMeansUTC(t *testing.T) {
	t.Parallel()
	next := mustParse(t, "0 2 * * *", nil).Next(mustTime(t, "2026-05-01T03:00:00Z"))
	if want := mustTime(t, "2026-05-02T02:00:00Z"); !next.Equal(want) {
		t.Fatalf("Next = %s, want %s", next, want)
	}
}
