package schedule

import (
	"testing"
	"time"
)

// TestNextDSTDayItems puts each Quartz day item on or next to a
// daylight-saving day (transitions listed in dst_test.go; also Berlin
// 2024-03-31 and 2027-10-31, New York 2027-03-14 and 2027-11-07). The
// items pick days only: the fixed and real-time rules of the minute and
// hour fields are unchanged.
func TestNextDSTDayItems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, zone, after string
		want                    []string
	}{
		{"Berlin L on a spring-forward day: 02:30 fires at the transition",
			"30 2 L 3 *", "Europe/Berlin", "2024-03-30T12:00:00Z",
			[]string{"2024-03-31T01:00:00Z", "2025-03-31T00:30:00Z"}},
		{"Berlin L on a fall-back day: 02:30 fires once, at the first (CEST)",
			"30 2 L 10 *", "Europe/Berlin", "2027-10-30T12:00:00Z",
			[]string{"2027-10-31T00:30:00Z", "2028-10-31T01:30:00Z"}},
		{"Berlin L on a fall-back day, real time: both passes",
			"*/30 2 L 10 *", "Europe/Berlin", "2027-10-30T23:00:00Z",
			[]string{"2027-10-31T00:00:00Z", "2027-10-31T00:30:00Z", "2027-10-31T01:00:00Z", "2027-10-31T01:30:00Z"}},
		{"Berlin L-2 is the spring-forward Sunday",
			"30 2 L-2 3 *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2027-03-29T00:30:00Z"}},
		{"Berlin 29W: the spring-forward Sunday moves to Monday, in CEST",
			"30 2 29W 3 *", "Europe/Berlin", "2026-03-28T00:00:00Z",
			[]string{"2026-03-30T00:30:00Z"}},
		{"Berlin LW after fall back is in CET",
			"30 2 LW 10 *", "Europe/Berlin", "2026-10-01T00:00:00Z",
			[]string{"2026-10-30T01:30:00Z"}},
		{"Berlin sun#5 is the spring-forward day",
			"30 2 * 3 sun#5", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z"}},
		{"Berlin 0#4 is the fall-back day, fires once",
			"30 2 * 10 0#4", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2027-10-24T00:30:00Z"}},
		{"Berlin 0L, spring forward",
			"30 2 * 3 0L", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z"}},
		{"Berlin sunL, real time: 02:00 CEST, 02:00 CET, 03:00 CET",
			"0 * * 10 sunL", "Europe/Berlin", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},

		{"New York L-23 is the spring-forward day, then a day in EST",
			"30 2 L-23 3 *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2027-03-08T07:30:00Z"}},
		{"New York L-29 is the fall-back day: 01:30 once, in EDT",
			"30 1 L-29 11 *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2027-11-01T05:30:00Z"}},
		{"New York sun#2 is the spring-forward day, both years",
			"30 2 * 3 sun#2", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2027-03-14T07:00:00Z"}},
		{"New York 7#1 is the fall-back day, both years",
			"30 1 * 11 7#1", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2027-11-07T05:30:00Z"}},
		{"New York sun#1, real time: 01:30 EDT and 01:30 EST",
			"30 * * 11 sun#1", "America/New_York", "2026-11-01T04:45:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"New York 8W: the spring-forward Sunday moves to Monday, in EDT",
			"30 2 8W 3 *", "America/New_York", "2026-03-01T00:00:00Z",
			[]string{"2026-03-09T06:30:00Z"}},
		{"New York LW and sunL after spring forward are in EDT",
			"30 2 LW 3 sunL", "America/New_York", "2026-03-01T00:00:00Z",
			[]string{"2026-03-29T06:30:00Z", "2026-03-31T06:30:00Z"}},

		{"Lord Howe L-25 is the fall-back day: 01:45 once, at +11",
			"45 1 L-25 4 *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2027-04-04T15:15:00Z"}},
		{"Lord Howe L-25, real time: 01:45 in both passes of the half hour",
			"45 * L-25 4 *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-04T16:15:00Z"}},
		{"Lord Howe L-27 is the spring-forward day: 02:15 fires at the transition",
			"15 2 L-27 10 *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:30:00Z"}},
		{"Lord Howe sun#1 in October, real time: 02:00 and 02:15 do not exist",
			"*/15 * * 10 sun#1", "Australia/Lord_Howe", "2026-10-03T15:00:00Z",
			[]string{"2026-10-03T15:15:00Z", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z"}},
		{"Lord Howe sun#1 in April, fixed: first occurrence",
			"45 1 * 4 sun#1", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z"}},
		{"Lord Howe 5W: the fall-back Sunday moves to Monday, at +10:30",
			"30 1 5W 4 *", "Australia/Lord_Howe", "2026-04-01T00:00:00Z",
			[]string{"2026-04-05T15:00:00Z"}},
		{"Lord Howe LW after spring forward is at +11",
			"15 2 LW 10 *", "Australia/Lord_Howe", "2026-10-01T00:00:00Z",
			[]string{"2026-10-29T15:15:00Z"}},
		{"Lord Howe 0L after fall back is at +10:30",
			"30 1 * 4 0L", "Australia/Lord_Howe", "2026-04-01T00:00:00Z",
			[]string{"2026-04-25T15:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, mustLoc(t, tc.zone)), tc.after, tc.want)
		})
	}
}

// @every D offset O is absolute time: the same slots in every zone, 90
// minutes apart across every transition.
func TestNextDSTEveryOffset(t *testing.T) {
	t.Parallel()
	// 86,400 is a multiple of 5,400, so the slots are the same each UTC day:
	// 00:15, 01:45, 03:15, ...
	tests := []struct{ zone, after string }{
		{"Europe/Berlin", "2026-03-29T00:00:00Z"},
		{"Europe/Berlin", "2026-10-25T00:00:00Z"},
		{"America/New_York", "2026-03-08T06:00:00Z"},
		{"America/New_York", "2026-11-01T05:00:00Z"},
		{"Australia/Lord_Howe", "2026-04-04T14:00:00Z"},
		{"Australia/Lord_Howe", "2026-10-03T15:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.zone+" "+tc.after, func(t *testing.T) {
			s := mustParse(t, "@every 90m offset 15m", mustLoc(t, tc.zone))
			prev := s.Next(mustTime(t, tc.after))
			if m := prev.UTC().Minute(); m != 15 && m != 45 {
				t.Fatalf("first slot %s is off the grid", prev.UTC())
			}
			for range 4 {
				next := s.Next(prev)
				if d := next.Sub(prev); d != 90*time.Minute {
					t.Fatalf("Next(%s) = %s, %s later; want 90m", prev.UTC(), next.UTC(), d)
				}
				if next.Location().String() != tc.zone {
					t.Fatalf("slot in %s, want %s", next.Location(), tc.zone)
				}
				prev = next
			}
		})
	}
	// On Lord Howe's 30-minute shift the slots keep their UTC minute, so
	// the wall minute moves: 01:30 +11, then 02:00 +10:30.
	s := mustParse(t, "@every 1h offset 30m", mustLoc(t, "Australia/Lord_Howe"))
	assertSequence(t, s, "2026-04-04T14:00:00Z", []string{"2026-04-04T14:30:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z"})
	if got := s.Next(mustTime(t, "2026-04-04T15:00:00Z")).Format("15:04 -07:00"); got != "02:00 +10:30" {
		t.Fatalf("slot after the shift shows %s, want 02:00 +10:30", got)
	}
}

// @at names an instant: its offset picks the pass of a repeated hour, and
// the zone only changes how it is shown.
func TestNextDSTAt(t *testing.T) {
	t.Parallel()
	tests := []struct{ spec, zone, want string }{
		{"@at 2026-10-25T02:30:00+02:00", "Europe/Berlin", "2026-10-25T00:30:00Z"},
		{"@at 2026-10-25T02:30:00+01:00", "Europe/Berlin", "2026-10-25T01:30:00Z"},
		{"@at 2026-03-08T03:00:00-04:00", "America/New_York", "2026-03-08T07:00:00Z"},
		{"@at 2026-04-05T01:45:00+11:00", "Australia/Lord_Howe", "2026-04-04T14:45:00Z"},
		{"@at 2026-04-05T01:45:00+10:30", "Australia/Lord_Howe", "2026-04-04T15:15:00Z"},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.spec, mustLoc(t, tc.zone))
		got := s.Next(mustTime(t, "2026-01-01T00:00:00Z"))
		if !got.Equal(mustTime(t, tc.want)) || got.Location().String() != tc.zone {
			t.Errorf("%s in %s: Next = %s, want %s in that zone", tc.spec, tc.zone, got, tc.want)
		}
	}
}

// A set keeps each member's own rule; instants where members meet fire
// once, also inside a skipped hour.
func TestNextDSTSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, zone, after string
		specs, want       []string
	}{
		{"Berlin fall: fixed 02:30 once, hourly in both passes", "Europe/Berlin", "2026-10-24T23:30:00Z",
			[]string{"30 2 * * *", "0 * * * *"},
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"Berlin spring: 02:30 and 03:00 meet at the transition, once", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"30 2 * * *", "0 3 * * *"},
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"New York fall: 02:00 EST is both members' slot, once", "America/New_York", "2026-11-01T04:30:00Z",
			[]string{"0 2 * * *", "0 * * * *"},
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
		{"Lord Howe fall: 01:30 +11 is both members' slot, once", "Australia/Lord_Howe", "2026-04-04T14:00:00Z",
			[]string{"30 1 * * *", "30 * * * *"},
			[]string{"2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z", "2026-04-04T16:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSet(tc.specs, mustLoc(t, tc.zone))
			if err != nil {
				t.Fatal(err)
			}
			assertSequence(t, s, tc.after, tc.want)
		})
	}
}
