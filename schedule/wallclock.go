package schedule

import "time"

// civil is a wall-clock time with no zone attached, at second precision.
// Calendar arithmetic on it never meets a DST transition.
type civil struct {
	year                 int
	month, day           int
	hour, minute, second int
}

// civilOf converts wall seconds (the wall time read as if it were UTC).
func civilOf(wall int64) civil {
	t := time.Unix(wall, 0).UTC()
	return civil{
		year: t.Year(), month: int(t.Month()), day: t.Day(),
		hour: t.Hour(), minute: t.Minute(), second: t.Second(),
	}
}

// unix returns the wall seconds of c (c read as if it were UTC).
func (c civil) unix() int64 {
	return c.utc().Unix()
}

func (c civil) utc() time.Time {
	return time.Date(c.year, time.Month(c.month), c.day, c.hour, c.minute, c.second, 0, time.UTC)
}

// before orders wall times without building a time.Time.
func (c civil) before(d civil) bool {
	a := [...]int{c.year, c.month, c.day, c.hour, c.minute, c.second}
	b := [...]int{d.year, d.month, d.day, d.hour, d.minute, d.second}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (c civil) weekday() int {
	return int(c.utc().Weekday())
}

func (c civil) nextDay() civil {
	t := time.Date(c.year, time.Month(c.month), c.day+1, 0, 0, 0, 0, time.UTC)
	return civil{year: t.Year(), month: int(t.Month()), day: t.Day()}
}

func (c civil) nextHour() civil {
	if c.hour >= 23 {
		return c.nextDay()
	}
	return civil{year: c.year, month: c.month, day: c.day, hour: c.hour + 1}
}

func (c civil) nextMinute() civil {
	if c.minute >= 59 {
		return c.nextHour()
	}
	return civil{year: c.year, month: c.month, day: c.day, hour: c.hour, minute: c.minute + 1}
}

// wallOf returns the wall seconds of instant t in its own location.
func wallOf(t time.Time) int64 {
	_, off := t.Zone()
	return t.Unix() + int64(off)
}

// wallStart returns the first wall time (in wall seconds) whose fire
// instant can lie after after. Normally that is after's own wall time plus
// one second; but when after falls in the second pass of a repeated
// (fall-back) hour, every wall time up to the end of the repeat already
// fired at its first occurrence, so the search starts past the repeat.
func wallStart(after time.Time, loc *time.Location) int64 {
	a := after.In(loc)
	w := wallOf(a) + 1
	start, _ := a.ZoneBounds()
	if start.IsZero() {
		return w
	}
	_, off := a.Zone()
	_, prevOff := start.Add(-time.Second).In(loc).Zone()
	if repeatEnd := start.Unix() + int64(prevOff); prevOff > off && w < repeatEnd {
		return repeatEnd
	}
	return w
}

// resolve maps a wall time in loc to its fire instant:
//   - a wall time that occurs once fires then;
//   - one the clock skips (spring forward) fires at the transition;
//   - one the clock shows twice (fall back) fires at its first occurrence.
//
// time.Date leaves the choice in gaps and overlaps unspecified, so the
// result is checked by reading the wall time back.
func resolve(w civil, loc *time.Location) time.Time {
	want := w.unix()
	t := time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, w.second, 0, loc)
	start, end := t.ZoneBounds()
	if got := wallOf(t); got != want {
		// In a gap: t was computed with the offset of one side of the
		// transition and so lies on the other side of it.
		if got > want && !start.IsZero() {
			return start
		}
		if got < want && !end.IsZero() {
			return end
		}
		return t
	}
	if start.IsZero() {
		return t
	}
	// t may be the second occurrence; the first one would lie in the
	// previous zone period, whose offset is larger.
	_, off := t.Zone()
	_, prevOff := start.Add(-time.Second).In(loc).Zone()
	if prevOff <= off {
		return t
	}
	first := time.Unix(want-int64(prevOff), 0).In(loc)
	if first.Before(start) && wallOf(first) == want {
		return first
	}
	return t
}
