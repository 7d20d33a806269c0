package calendar

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Years a date or an instant of an entry may fall in: wide enough for any
// calendar, narrow enough that no arithmetic on them overflows.
const (
	minYear = 1970
	maxYear = 2199
)

// add compiles one entry into s, or reports why it cannot.
func (s *Set) add(errs *Errors, field string, e *pb.CalendarEntry) {
	if n := utf8.RuneCountInString(e.GetNote()); n > MaxNote {
		errs.add(field+".note", "at most %d characters, got %d", MaxNote, n)
	}
	kinds := 0
	for _, set := range []bool{e.GetDate() != "", e.GetFrom() != "" || e.GetTo() != "", len(e.GetDays()) > 0} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		errs.add(field, "set exactly one of date, from and to (a range), or days (a weekly window)")
	case e.GetBetween() != "" && len(e.GetDays()) == 0:
		errs.add(field+".between", "only with days: between gives the wall times of a weekly window")
	case e.GetDate() != "":
		d, err := parseDate(e.GetDate())
		if err != nil {
			errs.add(field+".date", "%v", err)
			return
		}
		s.spans = append(s.spans, span{from: s.zone.instant(d * day), to: s.zone.instant((d + 1) * day)})
	case len(e.GetDays()) > 0:
		w, ok := parseWindow(errs, field, e.GetDays(), e.GetBetween())
		if ok {
			s.windows = append(s.windows, w)
		}
	default:
		s.addRange(errs, field, e.GetFrom(), e.GetTo())
	}
}

func (s *Set) addRange(errs *Errors, field, from, to string) {
	if from == "" || to == "" {
		errs.add(field, "a range needs both from and to")
		return
	}
	f, ferr := s.bound(from)
	if ferr != nil {
		errs.add(field+".from", "%v", ferr)
	}
	t, terr := s.bound(to)
	if terr != nil {
		errs.add(field+".to", "%v", terr)
	}
	if ferr != nil || terr != nil {
		return
	}
	if t <= f {
		errs.add(field+".to", "%s must be after from (%s): a range is [from, to)", to, from)
		return
	}
	s.spans = append(s.spans, span{from: f, to: t})
}

// bound is a range's end as an instant: an RFC 3339 time, or a date or a
// wall time in the calendar's zone. A fraction of a second rounds up:
// slots are whole seconds, and [from, to) keeps exactly the same ones.
func (s *Set) bound(v string) (int64, error) {
	if len(v) == len("2006-01-02") {
		d, err := parseDate(v)
		if err != nil {
			return 0, err
		}
		return s.zone.instant(d * day), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		if y := t.UTC().Year(); y < minYear || y > maxYear {
			return 0, yearError(v)
		}
		sec := t.Unix()
		if t.Nanosecond() > 0 {
			sec++
		}
		return sec, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			if y := t.Year(); y < minYear || y > maxYear {
				return 0, yearError(v)
			}
			return s.zone.instant(t.Unix()), nil
		}
	}
	return 0, fmt.Errorf("%q is neither an RFC 3339 time (2026-12-24T18:00:00Z), a date (2026-12-24) nor a wall time (2026-12-24T18:00)", v)
}

// parseDate is a date as days since 1970-01-01.
func parseDate(v string) (int64, error) {
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a date such as 2026-12-25", v)
	}
	if y := t.Year(); y < minYear || y > maxYear {
		return 0, yearError(v)
	}
	return t.Unix() / day, nil
}

func yearError(v string) error {
	return fmt.Errorf("%q is outside the years %d to %d", v, minYear, maxYear)
}

// weekdays are the day names of a weekly window, by their number.
var weekdays = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func weekday(name string) (int, bool) {
	for i, n := range weekdays {
		if n == name {
			return i, true
		}
	}
	return 0, false
}

// parseWindow reads a weekly window's days and wall times.
func parseWindow(errs *Errors, field string, days []string, between string) (window, bool) {
	var w window
	ok := true
	for i, d := range days {
		mask, err := parseDays(d)
		if err != nil {
			errs.add(field+".days["+strconv.Itoa(i)+"]", "%v", err)
			ok = false
		}
		w.days |= mask
	}
	w.start, w.end = 0, day
	if between != "" {
		start, end, err := parseBetween(between)
		if err != nil {
			errs.add(field+".between", "%v", err)
			return w, false
		}
		w.start, w.end = start, end
	}
	return w, ok
}

// parseDays reads one item of days: a day (fri) or a range (mon-fri,
// fri-mon), as a mask of weekdays.
func parseDays(v string) (uint8, error) {
	from, to, isRange := strings.Cut(v, "-")
	a, okA := weekday(from)
	b, okB := weekday(to)
	if !isRange {
		b, okB = a, okA
	}
	if !okA || !okB {
		return 0, fmt.Errorf("%q is not a day (mon, tue, wed, thu, fri, sat, sun) or a range of days (mon-fri)", v)
	}
	var mask uint8
	for d := a; ; d = (d + 1) % 7 {
		mask |= 1 << d
		if d == b {
			return mask, nil
		}
	}
}

// parseBetween reads HH:MM-HH:MM as seconds of the day; the end may be
// 24:00, and an end at or before the start runs into the next day.
func parseBetween(v string) (start, end int32, err error) {
	a, b, ok := strings.Cut(v, "-")
	bad := fmt.Errorf("%q is not HH:MM-HH:MM, such as 09:00-17:00 or 18:00-06:00", v)
	if !ok {
		return 0, 0, bad
	}
	start, okA := clock(a, false)
	end, okB := clock(b, true)
	switch {
	case !okA || !okB:
		return 0, 0, bad
	case start == end:
		return 0, 0, fmt.Errorf("%q starts and ends at the same time: leave between out for the whole day", v)
	}
	return start, end, nil
}

// clock reads HH:MM as seconds of the day; 24:00 only as an end.
func clock(v string, isEnd bool) (int32, bool) {
	if len(v) != 5 || v[2] != ':' {
		return 0, false
	}
	h, errH := strconv.Atoi(v[:2])
	m, errM := strconv.Atoi(v[3:])
	switch {
	case errH != nil || errM != nil || h < 0 || m < 0 || m > 59:
		return 0, false
	case h == 24 && m == 0 && isEnd:
		return day, true
	case h > 23:
		return 0, false
	}
	return int32(h*3600 + m*60), true
}

// NormalizeDays writes the days of weekly windows in lower case, as they
// are stored, so that a calendar read back applies unchanged.
func NormalizeDays(spec *pb.CalendarSpec) {
	for _, e := range spec.GetEntries() {
		for i, d := range e.GetDays() {
			e.Days[i] = strings.ToLower(strings.TrimSpace(d))
		}
	}
}
