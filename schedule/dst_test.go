package schedule

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// Transitions used below (all 2026):
//
//	Europe/Berlin        spring 03-29 01:00Z (02:00 CET -> 03:00 CEST), fall 10-25 01:00Z (03:00 CEST -> 02:00 CET)
//	America/New_York     spring 03-08 07:00Z (02:00 EST -> 03:00 EDT), fall 11-01 06:00Z (02:00 EDT -> 01:00 EST)
//	Australia/Lord_Howe  fall 04-04 15:00Z (02:00 +11 -> 01:30 +1030), spring 10-03 15:30Z (02:00 +1030 -> 02:30 +11)
//
// TestNextDSTFixed covers specs whose minute and hour fields are both fixed:
// they keep the wall-clock rules.
func TestNextDSTFixed(t *testing.T) {
	t.Parallel()
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
		{"Berlin spring: a list of fixed times in the gap fires once, at the transition",
			"0,30 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}},
		{"Berlin fall: 02:30 occurs twice, fires once at the first (CEST)",
			"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin fall: asked during the second 02:xx, the repeat is not fired again",
			"0,30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z",
			[]string{"2026-10-26T01:00:00Z"}},
		{"Berlin fall: a range of fixed minutes is fixed too (cronie reads only a leading *)",
			"0-59/20 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z",
			[]string{"2026-10-25T00:40:00Z", "2026-10-26T01:00:00Z"}},
		{"New York spring: 02:30 does not exist, fires at 03:00 EDT",
			"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"New York fall: 01:30 occurs twice, fires once at the first (EDT)",
			"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"New York fall: a fixed time outside the repeat is unaffected",
			"30 2 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"}},
		{"New York fall: @daily is fixed (00:00 is not in the repeat)",
			"@daily", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"}},
		{"Lord Howe fall back by 30 minutes: 01:45 fires at its first occurrence (+11)",
			"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
		{"Lord Howe spring forward by 30 minutes: 02:15 fires at the transition (02:30 +11)",
			"15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
			[]string{"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
		{"a star in the seconds field alone keeps the wall-clock rules",
			"* 30 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, mustLoc(t, tc.zone)), tc.after, tc.want)
		})
	}
}

// TestNextDSTRealTime covers specs with a star in the minute or hour field:
// they fire at every real instant whose wall time matches, so both passes
// of a repeated hour and no slot inside a skipped one.
func TestNextDSTRealTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, zone, after string
		want                    []string
	}{
		{"Berlin spring: hourly, 02:00 does not exist",
			"0 * * * *", "Europe/Berlin", "2026-03-28T23:30:00Z",
			// 01:00 CET, 03:00 CEST, 04:00 CEST
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"Berlin spring: every minute of hour 2 has no slot that day",
			"* 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-30T00:00:00Z", "2026-03-30T00:01:00Z"}},
		{"Berlin fall: hourly fires at 02:00 CEST and again at 02:00 CET",
			"0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"Berlin fall: asked during the second 02:xx, the repeat fires again",
			"*/20 * * * *", "Europe/Berlin", "2026-10-25T01:30:00Z",
			[]string{"2026-10-25T01:40:00Z", "2026-10-25T02:00:00Z"}},
		{"Berlin fall: asked at the transition instant, every second",
			"* * * * * *", "Europe/Berlin", "2026-10-25T01:00:00Z",
			[]string{"2026-10-25T01:00:01Z", "2026-10-25T01:00:02Z"}},
		{"Berlin fall: minute star, fixed hour: both passes of 02:xx",
			"* 2 * * *", "Europe/Berlin", "2026-10-25T00:58:30Z",
			[]string{"2026-10-25T00:59:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:01:00Z"}},
		{"New York spring: hourly fires every real hour (02:00 EST and 03:00 EDT are one instant)",
			"0 * * * *", "America/New_York", "2026-03-08T04:30:00Z",
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"New York fall: hourly fires at 01:00 EDT and at 01:00 EST",
			"0 * * * *", "America/New_York", "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"New York fall: hour star with a fixed minute follows real time too",
			"30 */1 * * *", "America/New_York", "2026-11-01T05:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"New York fall: @hourly is hourly",
			"@hourly", "America/New_York", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z"}},
		{"Lord Howe fall: 01:30 occurs in both passes",
			"30 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z",
			// 01:30 +11, 01:30 +1030, 02:30 +1030
			[]string{"2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z", "2026-04-04T16:00:00Z"}},
		{"Lord Howe spring: 02:00 and 02:15 do not exist",
			"*/15 * * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z",
			// 01:45 +1030, 02:30 +11, 02:45 +11
			[]string{"2026-10-03T15:15:00Z", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, mustLoc(t, tc.zone)), tc.after, tc.want)
		})
	}
}

// TestNextFiresPerLocalDay counts the fires within one local calendar day:
// a real-time spec fires once per real hour (23 or 25 on transition days),
// a fixed one once per wall time.
func TestNextFiresPerLocalDay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, zone, day string
		want            int
	}{
		{"0 * * * *", "America/New_York", "2026-03-08", 23},
		{"0 * * * *", "America/New_York", "2026-05-01", 24},
		{"0 * * * *", "America/New_York", "2026-11-01", 25},
		{"@hourly", "Europe/Berlin", "2026-03-29", 23},
		{"@hourly", "Europe/Berlin", "2026-10-25", 25},
		{"*/30 * * * *", "Europe/Berlin", "2026-10-25", 50},
		{"* 2 * * *", "Europe/Berlin", "2026-03-29", 0},
		{"* 2 * * *", "Europe/Berlin", "2026-10-25", 120},
		// Lord Howe shifts by 30 minutes: 01:00 is not repeated, 01:30 is.
		{"0 * * * *", "Australia/Lord_Howe", "2026-04-05", 24},
		{"30 * * * *", "Australia/Lord_Howe", "2026-04-05", 25},
		{"0 * * * *", "Australia/Lord_Howe", "2026-10-04", 23},
		// Fixed minute and hour: each wall time once.
		{"0 0-23 * * *", "America/New_York", "2026-03-08", 23},
		{"0 0-23 * * *", "America/New_York", "2026-11-01", 24},
		{"0,30 2 * * *", "Europe/Berlin", "2026-03-29", 1},
		{"0,30 2 * * *", "Europe/Berlin", "2026-10-25", 2},
	}
	for _, tc := range tests {
		t.Run(tc.spec+" "+tc.zone+" "+tc.day, func(t *testing.T) {
			loc := mustLoc(t, tc.zone)
			d, err := time.ParseInLocation(time.DateOnly, tc.day, loc)
			if err != nil {
				t.Fatal(err)
			}
			from, to := d, time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc)
			got := collect(mustParse(t, tc.spec, loc), from, to.Add(-time.Second))
			if len(got) != tc.want {
				t.Fatalf("%d fires, want %d: %v", len(got), tc.want, utcs(got))
			}
		})
	}
}

// TestNextMatchesBruteForce compares Next, around every 2026 transition of
// several zones, with a brute-force reading of the rules: walk real time
// minute by minute; a real-time spec fires whenever the clock shows a
// matching wall time; a fixed spec fires a matching wall time the first
// time the clock shows it, and fires skipped matching wall times when the
// clock jumps.
func TestNextMatchesBruteForce(t *testing.T) {
	t.Parallel()
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Auckland", "Europe/London", "America/Santiago"}
	specs := []string{
		"*/15 * * * *", "0 * * * *", "30 * * * *", "* 2 * * *", "*/7 1-3 * * *", "0 */2 * * *",
		"30 2 * * *", "45 1 * * *", "15 2 * * *", "0,30 0-4 * * *", "59 1 * * *", "0 2 * * 0", "0-59/20 1-3 * * *",
		"0 0-4 */2 * sun", "*/30 * 1-31/2 * 0",
	}
	for _, zone := range zones {
		loc := mustLoc(t, zone)
		for _, tr := range transitions(loc, 2026) {
			for _, spec := range specs {
				from, to := tr.Add(-30*time.Hour), tr.Add(30*time.Hour)
				want := bruteForce(t, spec, loc, from, to)
				got := collect(mustParse(t, spec, loc), from, to)
				if i, differ := firstDiff(got, want); differ {
					t.Errorf("%s %q around %s: %d fires, want %d; first difference at #%d:\n got  %v\n want %v",
						zone, spec, tr.UTC(), len(got), len(want), i, utcs(window(got, i)), utcs(window(want, i)))
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
	o := newOracle(t, spec)
	seen := map[int64]bool{}
	fires := map[int64]bool{}
	fire := func(wall int64, at time.Time) {
		if !o.matches(time.Unix(wall, 0).UTC()) || (!o.realTime && seen[wall]) {
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
		for skipped := prevWall + 60; skipped < wall && !o.realTime; skipped += 60 {
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

// oracle is a direct reading of crontab(5) for a five-field spec: robfig's
// bit sets, and the star flags taken from the fields' first characters.
type oracle struct {
	s                *cron.SpecSchedule
	domStar, dowStar bool
	realTime         bool
}

func newOracle(t *testing.T, spec string) oracle {
	t.Helper()
	parsed, err := parser.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(spec)
	if len(f) != 5 {
		t.Fatalf("oracle reads five-field specs only: %q", spec)
	}
	star := func(i int) bool { return f[i][0] == '*' }
	return oracle{s: parsed.(*cron.SpecSchedule), domStar: star(2), dowStar: star(4), realTime: star(0) || star(1)}
}

// matches reports whether wall time w (its fields read in UTC) matches.
func (o oracle) matches(w time.Time) bool {
	has := func(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }
	s := o.s
	if !has(s.Second, w.Second()) || !has(s.Minute, w.Minute()) || !has(s.Hour, w.Hour()) || !has(s.Month, int(w.Month())) {
		return false
	}
	dom, dow := has(s.Dom, w.Day()), has(s.Dow, int(w.Weekday()))
	if o.domStar || o.dowStar {
		return dom && dow
	}
	return dom || dow
}

// firstDiff returns the first index where a and b differ as instants.
func firstDiff(a, b []time.Time) (int, bool) {
	for i := range min(len(a), len(b)) {
		if !a[i].Equal(b[i]) {
			return i, true
		}
	}
	return min(len(a), len(b)), len(a) != len(b)
}

// window returns a few elements of ts around index i.
func window(ts []time.Time, i int) []time.Time {
	return ts[max(0, i-2):min(len(ts), i+3)]
}

func utcs(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("01-02T15:04Z")
	}
	return out
}
