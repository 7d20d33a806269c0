package schedule

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file checks Next against a brute-force scan: random specs, with
// Quartz day items, are built together with the sets their fields select,
// and every instant of a window (each minute, or each second for six
// fields) is tested against those sets under the rules of DESIGN.md —
// fixed specs fire each matching wall time once (at its first occurrence,
// or at the end of a gap), real-time specs at every instant whose wall time
// matches. Neither the parser nor Next is used to build the expectation.

// Santiago shifts at midnight, so its gaps and repeats cross days.
var scanZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"}

// genSpec is a random spec and the sets its fields select.
type genSpec struct {
	text                          string
	six                           bool
	sec, min, hour                [60]bool
	month                         [13]bool
	dom                           [32]bool
	dow                           [7]bool
	fromEnd, nearest, nearFromEnd []int    // L-N, NW and L-NW
	nth                           [][2]int // DOW#N as (day, n)
	lastDow                       []int    // DOWL
	minStar, hourStar             bool
	domStar, dowStar              bool
}

var (
	monthNames = []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	weekNames  = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

func genSpecOf(r *rand.Rand) *genSpec {
	g := &genSpec{six: r.IntN(5) == 0}
	var fields []string
	if g.six {
		text, _ := genStandard(r, 0, 59, g.sec[:], nil)
		fields = append(fields, text)
	}
	minute, minStar := genStandard(r, 0, 59, g.min[:], nil)
	hour, hourStar := genStandard(r, 0, 23, g.hour[:], nil)
	g.minStar, g.hourStar = minStar, hourStar
	dom := g.genDom(r)
	month := "*"
	if r.IntN(4) == 0 {
		month, _ = genStandard(r, 1, 12, g.month[:], monthNames)
	} else {
		setRange(g.month[:], 1, 12, 1)
	}
	dow := g.genDow(r)
	g.text = strings.Join(append(fields, minute, hour, dom, month, dow), " ")
	return g
}

// genStandard writes a random standard field over [lo, hi] and marks what
// it selects in set; star reports a leading "*" (cronie's rule).
func genStandard(r *rand.Rand, lo, hi int, set []bool, names []string) (text string, star bool) {
	switch r.IntN(8) {
	case 0, 1:
		setRange(set, lo, hi, 1)
		return "*", true
	case 2:
		k := 1 + r.IntN(hi-lo)
		setRange(set, lo, hi, k)
		return "*/" + strconv.Itoa(k), true
	}
	parts := make([]string, 1+r.IntN(3))
	for i := range parts {
		parts[i] = genPart(r, lo, hi, set, names)
	}
	return strings.Join(parts, ","), false
}

// genPart writes a value, a range or a stepped range.
func genPart(r *rand.Rand, lo, hi int, set []bool, names []string) string {
	a := lo + r.IntN(hi-lo+1)
	switch r.IntN(3) {
	case 0:
		set[a] = true
		if names != nil && r.IntN(2) == 0 {
			return names[a]
		}
		return strconv.Itoa(a)
	case 1:
		b := a + r.IntN(hi-a+1)
		setRange(set, a, b, 1)
		return fmt.Sprintf("%d-%d", a, b)
	}
	b := a + r.IntN(hi-a+1)
	k := 1 + r.IntN(hi-lo)
	setRange(set, a, b, k)
	return fmt.Sprintf("%d-%d/%d", a, b, k)
}

func setRange(set []bool, a, b, step int) {
	for v := a; v <= b; v += step {
		set[v] = true
	}
}

// genDom writes a day-of-month field: a star, or a list mixing standard
// parts and Quartz items.
func (g *genSpec) genDom(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0, 1:
		g.domStar = true
		setRange(g.dom[:], 1, 31, 1)
		return "*"
	case 2:
		g.domStar = true
		setRange(g.dom[:], 1, 31, 1)
		return "?"
	}
	items := make([]string, 1+r.IntN(2))
	for i := range items {
		if r.IntN(4) == 0 {
			items[i] = genPart(r, 1, 31, g.dom[:], nil)
			continue
		}
		n := r.IntN(31)
		switch r.IntN(5) {
		case 0:
			items[i] = "L"
			g.fromEnd = append(g.fromEnd, 0)
		case 1:
			items[i] = fmt.Sprintf("L-%d", n)
			g.fromEnd = append(g.fromEnd, n)
		case 2:
			items[i] = "LW"
			g.nearFromEnd = append(g.nearFromEnd, 0)
		case 3:
			items[i] = fmt.Sprintf("L-%dW", n)
			g.nearFromEnd = append(g.nearFromEnd, n)
		default:
			items[i] = fmt.Sprintf("%dW", n+1)
			g.nearest = append(g.nearest, n+1)
		}
		if r.IntN(3) == 0 {
			items[i] = strings.ToLower(items[i])
		}
	}
	return strings.Join(items, ",")
}

// genDow writes a day-of-week field: a star, or a list mixing standard
// parts (0-6) and Quartz items (days 0-7 or names).
func (g *genSpec) genDow(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0, 1, 2:
		g.dowStar = true
		setRange(g.dow[:], 0, 6, 1)
		return "*"
	case 3:
		g.dowStar = true
		setRange(g.dow[:], 0, 6, 1)
		return "?"
	}
	items := make([]string, 1+r.IntN(2))
	for i := range items {
		if r.IntN(4) == 0 {
			items[i] = genPart(r, 0, 6, g.dow[:], weekNames)
			continue
		}
		d := r.IntN(8)
		day := strconv.Itoa(d)
		if r.IntN(3) == 0 {
			day = weekNames[d%7]
		}
		if r.IntN(2) == 0 {
			n := 1 + r.IntN(5)
			items[i] = fmt.Sprintf("%s#%d", day, n)
			g.nth = append(g.nth, [2]int{d % 7, n})
		} else {
			items[i] = day + "L"
			g.lastDow = append(g.lastDow, d%7)
		}
	}
	return strings.Join(items, ",")
}

// matches reports whether wall time w (a wall clock read as UTC) matches.
func (g *genSpec) matches(w time.Time) bool {
	if g.six && !g.sec[w.Second()] || !g.six && w.Second() != 0 {
		return false
	}
	return g.min[w.Minute()] && g.hour[w.Hour()] && g.dayMatches(w.Year(), w.Month(), w.Day())
}

// dayMatches applies the month and both day fields, each item by its plain
// definition.
func (g *genSpec) dayMatches(y int, m time.Month, d int) bool {
	if !g.month[m] {
		return false
	}
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	wd := int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday())
	domOK := g.dom[d]
	for _, n := range g.fromEnd {
		domOK = domOK || d == last-n
	}
	for _, n := range g.nearest {
		domOK = domOK || n <= last && d == nearestByDistance(y, m, n, last)
	}
	for _, n := range g.nearFromEnd {
		domOK = domOK || last-n >= 1 && d == nearestByDistance(y, m, last-n, last)
	}
	dowOK := g.dow[wd]
	for _, it := range g.nth {
		dowOK = dowOK || wd == it[0] && (d-1)/7+1 == it[1]
	}
	for _, day := range g.lastDow {
		dowOK = dowOK || wd == day && d+7 > last
	}
	if g.domStar || g.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nearestByDistance is the Monday-Friday of the month closest to target.
func nearestByDistance(y int, m time.Month, target, last int) int {
	best := 0
	for d := 1; d <= last; d++ {
		wd := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
		if wd == time.Saturday || wd == time.Sunday {
			continue
		}
		if best == 0 || abs(d-target) < abs(best-target) {
			best = d
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// scanFires lists the instants of (from, to], step apart, at which g fires
// in loc.
func scanFires(g *genSpec, loc *time.Location, from, to time.Time, step time.Duration) []time.Time {
	wall := func(t time.Time) int64 { _, off := t.In(loc).Zone(); return t.Unix() + int64(off) }
	fixed := !g.minStar && !g.hourStar
	high := wall(from) // the latest wall time the clock has shown
	var fires []time.Time
	for t := from.Add(step); !t.After(to); t = t.Add(step) {
		w := wall(t)
		if !fixed {
			if g.matches(time.Unix(w, 0).UTC()) {
				fires = append(fires, t)
			}
			continue
		}
		// Wall times up to high fired when first shown; those the clock
		// jumped over fire now, with w.
		for x := high + int64(step/time.Second); x <= w; x += int64(step / time.Second) {
			if g.matches(time.Unix(x, 0).UTC()) {
				fires = append(fires, t)
				break
			}
		}
		high = max(high, w)
	}
	return fires
}

// scanCase checks one random spec around one instant: either a
// daylight-saving transition of the zone or a day the day fields select.
func scanCase(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	g := genSpecOf(r)
	loc := mustLoc(t, scanZones[r.IntN(len(scanZones))])
	s, err := Parse(g.text, loc)
	if err != nil {
		t.Fatalf("seed %d: Parse(%q): %v", seed, g.text, err)
	}
	center := scanCenter(r, g, loc)
	step, span, warm := time.Minute, 36*time.Hour, 24*time.Hour
	if g.six {
		step, span, warm = time.Second, 2*time.Hour, time.Hour
	}
	from := center.Add(-span).Truncate(step)
	to := center.Add(span)
	fires := scanFires(g, loc, from, to, step)
	start := from.Add(warm)
	first := sort.Search(len(fires), func(i int) bool { return fires[i].After(start) })
	want := fires[first:]
	where := fmt.Sprintf("seed %d: %q in %s", seed, g.text, loc)

	// The chain of Next from start is the scan's list, then nothing
	// within the scan.
	cur := start
	for i, w := range want {
		next := s.Next(cur)
		if !next.Equal(w) {
			t.Fatalf("%s: fire %d: Next(%s) = %s, scan says %s", where, i, utc(cur), utc(next), utc(w))
		}
		cur = next
	}
	if next := s.Next(cur); !next.IsZero() && !next.After(to) {
		t.Fatalf("%s: Next(%s) = %s, the scan has no fire up to %s", where, utc(cur), utc(next), utc(to))
	}
	// Next from anywhere in the window, fractions of a second included,
	// and from around each transition (in either pass of a repeated hour).
	var queries []time.Time
	for range 20 {
		queries = append(queries, start.Add(time.Duration(r.Int64N(int64(to.Sub(start))))))
	}
	for _, tr := range transitionsBetween(loc, start, to) {
		for range 20 {
			queries = append(queries, tr.Add(time.Duration(r.Int64N(int64(3*time.Hour)))-90*time.Minute))
		}
	}
	for _, at := range queries {
		if at.Before(start) {
			continue
		}
		i := sort.Search(len(want), func(i int) bool { return want[i].After(at) })
		next := s.Next(at)
		switch {
		case i < len(want) && !next.Equal(want[i]):
			t.Fatalf("%s: Next(%s) = %s, scan says %s", where, utc(at), utc(next), utc(want[i]))
		case i == len(want) && !next.IsZero() && !next.After(to):
			t.Fatalf("%s: Next(%s) = %s, the scan has no fire up to %s", where, utc(at), utc(next), utc(to))
		}
	}
}

// transitionsBetween lists the instants in [from, to) where loc's offset changes.
func transitionsBetween(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from.In(loc); t.Before(to); {
		_, end := t.ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			break
		}
		out = append(out, end)
		t = end
	}
	return out
}

// scanCenter picks where to look: a transition of loc (half the time, in
// zones that have them), else a day g selects, found from a random date
// between 2024 and 2030, at a random hour.
func scanCenter(r *rand.Rand, g *genSpec, loc *time.Location) time.Time {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, loc).Add(time.Duration(r.Int64N(int64(6 * 365 * 24 * time.Hour))))
	if loc != time.UTC && r.IntN(2) == 0 {
		if _, end := base.ZoneBounds(); !end.IsZero() {
			return end
		}
	}
	y, m, d := base.Date()
	for i := range 400 {
		day := time.Date(y, m, d+i, 0, 0, 0, 0, time.UTC)
		if g.dayMatches(day.Year(), day.Month(), day.Day()) {
			return time.Date(day.Year(), day.Month(), day.Day(), r.IntN(24), r.IntN(60), 0, 0, loc)
		}
	}
	return base
}

func utc(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("2006-01-02T15:04:05.999Z")
}

func TestNextMatchesScan(t *testing.T) {
	t.Parallel()
	cases := uint64(300)
	if testing.Short() {
		cases = 50
	}
	for seed := range cases {
		scanCase(t, seed)
	}
}

func FuzzNextMatchesScan(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42, 1 << 40} {
		f.Add(seed)
	}
	f.Fuzz(scanCase)
}

// TestNextMatchesDays follows day items over years: a fixed noon time (no
// zone here shifts at noon) on every day the oracle selects, for three
// years from a random date.
func TestNextMatchesDays(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0xda75))
		g := genSpecOf(r)
		g.six = false
		minute := r.IntN(60)
		fields := strings.Fields(g.text)
		g.text = strings.Join(append([]string{strconv.Itoa(minute), "12"}, fields[len(fields)-3:]...), " ")
		loc := mustLoc(t, scanZones[r.IntN(len(scanZones))])
		s, err := Parse(g.text, loc)
		if err != nil {
			t.Fatalf("seed %d: Parse(%q): %v", seed, g.text, err)
		}
		day := time.Date(2024+r.IntN(6), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		cur := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
		for range 3 * 366 {
			y, m, d := day.Date()
			if g.dayMatches(y, m, d) {
				want := time.Date(y, m, d, 12, minute, 0, 0, loc)
				if next := s.Next(cur); !next.Equal(want) {
					t.Fatalf("seed %d: %q in %s: Next(%s) = %s, want %s", seed, g.text, loc, utc(cur), utc(next), utc(want))
				}
				cur = want
			}
			day = day.AddDate(0, 0, 1)
		}
	}
}
