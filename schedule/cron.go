package schedule

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// starBit is robfig's marker, in a field's bit set, that the field was
// written as "*" or "?" (unrestricted).
const starBit = uint64(1) << 63

// maxResolveSteps bounds the steps of one Next call: the matching wall
// times nextFixed passes over because their instant is not after the given
// time (after the fall-back skip in wallStart, only in zones with several
// transitions in a row), or the zone periods nextReal crosses. The year
// bound ends both loops long before; this one keeps Next finite whatever
// the zone data says.
const maxResolveSteps = 1 << 16

// cronSchedule evaluates robfig's parsed bit fields, and the Quartz day
// items robfig does not know, against wall-clock time in loc.
type cronSchedule struct {
	second, minute, hour, dom, month, dow uint64
	star                                  stars
	days                                  *dayRules // nil for most specs
	loc                                   *time.Location
}

// stars records which fields count as "*" under cronie's rule (crontab(5)):
// the field's text starts with "*", whatever step or list follows. robfig
// keeps its own star bit only for "*" and "*/1", so for fields the text is
// read again.
type stars struct {
	minute, hour, dom, dow bool
}

// parseCron parses a five- or six-field spec: splitDays reads the Quartz
// day items, robfig the rest.
func parseCron(spec string, loc *time.Location) (Schedule, error) {
	fields := strings.Fields(spec)
	if n := len(fields); n < len(cronFields)-1 || n > len(cronFields) {
		return nil, &SyntaxError{Reason: fmt.Sprintf(fieldCount, n)}
	}
	days, std, bad, err := splitDays(fields)
	if err != nil {
		if earlier := fieldFault(std[:bad], fields); earlier != nil {
			return nil, earlier
		}
		return nil, err
	}
	parsed, err := parseWith(parser, strings.Join(std, " "))
	if err != nil {
		return nil, explain(std, fields, err)
	}
	s, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: unsupported schedule kind %T", ErrSyntax, parsed)
	}
	return newCronSchedule(s, starsOf(fields), days, loc), nil
}

// starsOf reads the star flags of a spec's fields (a sixth field is the
// leading seconds field). "?" is robfig's synonym for "*".
func starsOf(fields []string) stars {
	f := fields[len(fields)-5:]
	isStar := func(field string) bool { return field[0] == '*' || field[0] == '?' }
	return stars{minute: isStar(f[0]), hour: isStar(f[1]), dom: isStar(f[2]), dow: isStar(f[4])}
}

func newCronSchedule(s *cron.SpecSchedule, star stars, days *dayRules, loc *time.Location) *cronSchedule {
	c := &cronSchedule{
		second: s.Second &^ starBit,
		minute: s.Minute &^ starBit,
		hour:   s.Hour &^ starBit,
		dom:    s.Dom &^ starBit,
		month:  s.Month &^ starBit,
		dow:    s.Dow &^ starBit,
		star:   star,
		days:   days,
		loc:    loc,
	}
	if days != nil && days.onlyDom {
		c.dom = 0
	}
	if days != nil && days.onlyDow {
		c.dow = 0
	}
	return c
}

// Next returns the first fire time strictly after after. A spec with a
// star in its minute or hour field follows real time (cronie's wildcard
// jobs); one whose minute and hour are both fixed follows the wall clock.
func (c *cronSchedule) Next(after time.Time) time.Time {
	if c.star.minute || c.star.hour {
		return c.nextReal(after)
	}
	return c.nextFixed(after)
}

// nextFixed walks matching wall-clock times in order and returns the
// instant of the first one that lies after after. Each matching wall time
// fires once: at its first occurrence if the clock repeats it, at the
// transition if the clock skips it.
func (c *cronSchedule) nextFixed(after time.Time) time.Time {
	from := civilOf(wallStart(after, c.loc))
	until := searchEnd(from.year)
	for range maxResolveSteps {
		w, ok := c.nextWall(from, until)
		if !ok {
			return time.Time{}
		}
		if t := resolve(w, c.loc); t.After(after) {
			return t
		}
		from = civilOf(w.unix() + 1)
	}
	return time.Time{}
}

// nextReal returns the first instant after after whose wall time in loc
// matches. Within one zone period the offset is constant, so wall time and
// real time move together and a wall-time walk bounded by the period's end
// finds the period's first match; without one, the walk moves on to the
// next period. A repeated hour thus matches in both passes, a skipped one
// never.
func (c *cronSchedule) nextReal(after time.Time) time.Time {
	// Unix floors, so a fractional after still starts at the next second.
	start := time.Unix(after.Unix()+1, 0).In(c.loc)
	limit := searchEnd(start.Year())
	for range maxResolveSteps {
		_, off := start.Zone()
		_, end := start.ZoneBounds()
		until := limit
		if !end.IsZero() {
			if e := civilOf(end.Unix() + int64(off)); e.before(limit) {
				until = e
			}
		}
		if w, ok := c.nextWall(civilOf(wallOf(start)), until); ok {
			return time.Unix(w.unix()-int64(off), 0).In(c.loc)
		}
		if until == limit {
			return time.Time{}
		}
		start = end
	}
	return time.Time{}
}

// searchEnd is the first wall time Next no longer searches when it starts
// in year.
func searchEnd(year int) civil {
	return civil{year: year + SearchYears + 1, month: 1, day: 1}
}

// nextWall returns the first wall time at or after from, and before until,
// that matches every field. Each failed check moves t strictly forward to
// the earliest candidate the check leaves possible.
func (c *cronSchedule) nextWall(t, until civil) (civil, bool) {
	for t.before(until) {
		mo, ok := nextBit(c.month, t.month)
		if !ok {
			t = civil{year: t.year + 1, month: 1, day: 1}
			continue
		}
		if mo != t.month {
			t = civil{year: t.year, month: mo, day: 1}
		}
		if !c.dayMatches(t) {
			t = t.nextDay()
			continue
		}
		h, ok := nextBit(c.hour, t.hour)
		if !ok {
			t = t.nextDay()
			continue
		}
		if h != t.hour {
			t.hour, t.minute, t.second = h, 0, 0
		}
		mi, ok := nextBit(c.minute, t.minute)
		if !ok {
			t = t.nextHour()
			continue
		}
		if mi != t.minute {
			t.minute, t.second = mi, 0
		}
		s, ok := nextBit(c.second, t.second)
		if !ok {
			t = t.nextMinute()
			continue
		}
		t.second = s
		return t, t.before(until)
	}
	return civil{}, false
}

// dayMatches applies cronie's day rule: when either day field is a star
// both must match (each field's own set still applies, so "*/2" keeps only
// odd days), otherwise either may.
func (c *cronSchedule) dayMatches(t civil) bool {
	domOK := c.dom&(1<<uint(t.day)) != 0
	dowOK := c.dow&(1<<uint(t.weekday())) != 0
	if c.days != nil {
		dom, dow := c.days.inMonth(t.year, t.month)
		domOK = domOK || dom&(1<<uint(t.day)) != 0
		dowOK = dowOK || dow&(1<<uint(t.day)) != 0
	}
	if c.star.dom || c.star.dow {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nextBit returns the smallest set bit of mask at position >= from.
func nextBit(mask uint64, from int) (int, bool) {
	if from < 0 || from > 63 {
		return 0, false
	}
	m := mask & (^uint64(0) << uint(from))
	if m == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(m), true
}
