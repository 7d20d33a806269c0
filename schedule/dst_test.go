package schedule

import (
	"sort"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// Transitions used below (all 2026):
//
//	Europe/Berlin     spring 03-29 01:00Z (02:00 CET -> 03:00 CEST), fall 10-25 01:00Z (03:00 CEST -> 02:00 CET)
//	America/New_York  spring 03-08 07:00Z (02:00 EST -> 03:00 EDT), fall 11-01 06:00Z (02:00 EDT -> 01:00 EST)
func TestNextDST(t *testing.T) {
	tests := []struct {
		name, spec, zone, after string
		want                    []string
	}{
		{"Berlin spring: 02:30 does not exist, fires at the transition (03:00 CEST)",
			"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin spring: the day before is still CET",
			"30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z"}},
		{"Berlin fall: 02:30 occurs twice, fires once at the first (CEST)",
			"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin fall: asked during the second 02:xx, the repeat is not fired again",
			"*/20 * * * *", "Europe/Berlin", "2026-10-25T01:30:00Z",
			[]string{"2026-10-25T02:00:00Z", "2026-10-25T02:20:00Z"}},
		{"Berlin fall: asked at the transition instant",
			"* * * * * *", "Europe/Berlin", "2026-10-25T01:00:00Z",
			[]string{"2026-10-25T02:00:00Z", "2026-10-25T02:00:01Z"}},
		{"Berlin spring: every minute of the missing hour fires once, at the transition",
			"* 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}},
		{"New York spring: 02:30 does not exist, fires at 03:00 EDT",
			"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"New York fall: 01:30 occurs twice, fires once at the first (EDT)",
			"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"New York fall: a fixed time outside the repeat is unaffected",
			"30 2 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"}},
		{"New York fall: hourly fires at each distinct wall time once (01:00 once)",
			"0 * * * *", "America/New_York", "2026-11-01T03:30:00Z",
			// 00:00 EDT, 01:00 EDT, (01:00 EST repeats: skipped), 02:00 EST, 03:00 EST
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
		{"New York spring: hourly fires every real hour (02:00 and 03:00 are one instant)",
			"0 * * * *", "America/New_York", "2026-03-08T04:30:00Z",
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"Lord Howe fall back by 30 minutes: 01:45 fires at its first occurrence (+11)",
			"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, mustLoc(t, tc.zone)), tc.after, tc.want)
		})
	}
}

// TestNextMatchesBruteForce compares Next, around every 2026 transition of
// several zones, with a brute-force reading of the rules: walk real time
// minute by minute, fire a matching wall time the first time the clock
// shows it, and fire skipped matching wall times when the clock jumps.
func TestNextMatchesBruteForce(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Auckland", "Europe/London", "America/Santiago"}
	specs := []string{"*/15 * * * *", "0 * * * *", "30 2 * * *", "45 1 * * *", "*/7 1-3 * * *", "0,30 0-4 * * *", "59 1 * * *", "0 2 * * 0"}
	for _, zone := range zones {
		loc := mustLoc(t, zone)
		for _, tr := range transitions(loc, 2026) {
			for _, spec := range specs {
				from, to := tr.Add(-30*time.Hour), tr.Add(30*time.Hour)
				want := bruteForce(t, spec, loc, from, to)
				got := collect(mustParse(t, spec, loc), from, to)
				if !equalInstants(got, want) {
					t.Errorf("%s %q around %s:\n got  %v\n want %v", zone, spec, tr.UTC(), utcs(got), utcs(want))
				}
			}
		}
	}
}

func transitions(loc *time.Location, year int) []time.Time {
	var out []time.Time
	t := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
	endOfYear := time.Date(year+1, 1, 1, 0, 0, 0, 0, loc)
	for range 10 {
		_, end := t.ZoneBounds()
		if end.IsZero() || !end.Before(endOfYear) {
			break
		}
		out = append(out, end)
		t = end
	}
	if len(out) == 0 {
		panic("no transitions in " + loc.String())
	}
	return out
}

// collect returns the fire times in [from, to] by iterating Next.
func collect(s Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for cur := from.Add(-time.Second); len(out) < 10000; {
		cur = s.Next(cur)
		if cur.IsZero() || cur.After(to) {
			break
		}
		out = append(out, cur)
	}
	return out
}

func bruteForce(t *testing.T, spec string, loc *time.Location, from, to time.Time) []time.Time {
	t.Helper()
	parsed, err := parser.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	ss := parsed.(*cron.SpecSchedule)
	seen := map[int64]bool{}
	fires := map[int64]bool{}
	fire := func(wall int64, at time.Time) {
		if seen[wall] || !matchesWall(ss, time.Unix(wall, 0).UTC()) {
			return
		}
		seen[wall] = true
		if !at.Before(from) && !at.After(to) {
			fires[at.Unix()] = true
		}
	}
	start := from.Add(-6 * time.Hour).Truncate(time.Minute)
	prevWall := wallOf(start.In(loc)) - 60
	for at := start; !at.After(to); at = at.Add(time.Minute) {
		wall := wallOf(at.In(loc))
		for skipped := prevWall + 60; skipped < wall; skipped += 60 {
			fire(skipped, at)
		}
		fire(wall, at)
		prevWall = wall
	}
	var out []time.Time
	for sec := range fires {
		out = append(out, time.Unix(sec, 0))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// matchesWall is a direct reading of cron field matching for a wall time
// expressed in UTC fields.
func matchesWall(s *cron.SpecSchedule, w time.Time) bool {
	has := func(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }
	if !has(s.Second, w.Second()) || !has(s.Minute, w.Minute()) || !has(s.Hour, w.Hour()) || !has(s.Month, int(w.Month())) {
		return false
	}
	dom, dow := has(s.Dom, w.Day()), has(s.Dow, int(w.Weekday()))
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

func equalInstants(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func utcs(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("01-02T15:04Z")
	}
	return out
}
