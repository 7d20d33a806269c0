// Package ics reads an iCalendar file (RFC 5545) into calendar entries:
// each VEVENT, its recurrences expanded, becomes dates (all-day events)
// or ranges (timed events). It parses with go-ical and expands RRULE,
// RDATE and EXDATE with rrule-go, in the event's own zone, so a weekly
// 09:00 meeting stays at 09:00 across daylight saving time.
package ics

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	ical "github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"

	"github.com/raftcron/raftcron/calendar"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxBytes bounds an iCalendar file.
const MaxBytes = 1 << 20

// ErrSyntax: the file is no iCalendar file this package can read.
var ErrSyntax = errors.New("not a valid iCalendar file")

// Window is the time an import expands into entries: occurrences that end
// after From and start before Until. Recurrences have no end of their
// own, and every entry travels in the Raft log.
type Window struct {
	From, Until time.Time
}

// DefaultWindow is what `calendar import` expands at now: from the start
// of the previous year through the end of the fifth year after this one.
func DefaultWindow(now time.Time) Window {
	y := now.UTC().Year()
	return Window{
		From:  time.Date(y-1, 1, 1, 0, 0, 0, 0, time.UTC),
		Until: time.Date(y+6, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// Result is what an import read.
type Result struct {
	Entries []*pb.CalendarEntry
	// Events is how many VEVENTs the file has (cancelled ones included).
	Events int
	// Zone is the file's X-WR-TIMEZONE, if any: the zone a calendar
	// imported without one takes.
	Zone string
}

// Parse reads the file's calendar; the error wraps ErrSyntax.
func Parse(r io.Reader) (*ical.Calendar, error) {
	cal, err := ical.NewDecoder(io.LimitReader(r, MaxBytes+1)).Decode()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return cal, nil
}

// Zone is the file's X-WR-TIMEZONE, or "".
func Zone(cal *ical.Calendar) string {
	if p := cal.Props.Get("X-WR-TIMEZONE"); p != nil {
		return strings.TrimSpace(p.Value)
	}
	return ""
}

// Entries turns the calendar's events into entries, in the order of the
// events and their occurrences. loc is the calendar's zone: the zone of
// times without one (floating times) and of all-day events.
func Entries(cal *ical.Calendar, loc *time.Location, w Window) (Result, error) {
	res := Result{Zone: Zone(cal)}
	events := cal.Events()
	res.Events = len(events)
	overrides, err := overridden(events, loc)
	if err != nil {
		return res, err
	}
	for i, ev := range events {
		e := event{Event: ev, loc: loc, pos: i}
		out, err := e.entries(w, overrides[e.uid()])
		if err != nil {
			return res, fmt.Errorf("%s: %w", e.name(), err)
		}
		res.Entries = append(res.Entries, out...)
		if len(res.Entries) > calendar.MaxEntries {
			return res, fmt.Errorf("the events expand to more than %d entries from %s until %s",
				calendar.MaxEntries, w.From.Format(time.DateOnly), w.Until.Format(time.DateOnly))
		}
	}
	return res, nil
}

// overridden collects, per UID, the occurrences that events with a
// RECURRENCE-ID replace: the recurring event leaves them out, and the
// replacing event stands for itself.
func overridden(events []ical.Event, loc *time.Location) (map[string][]time.Time, error) {
	out := map[string][]time.Time{}
	for i, ev := range events {
		p := ev.Props.Get(ical.PropRecurrenceID)
		if p == nil {
			continue
		}
		e := event{Event: ev, loc: loc, pos: i}
		t, err := e.time(p)
		if err != nil {
			return nil, fmt.Errorf("%s: RECURRENCE-ID: %w", e.name(), err)
		}
		out[e.uid()] = append(out[e.uid()], t)
	}
	return out, nil
}

// event is one VEVENT being read.
type event struct {
	ical.Event
	loc *time.Location
	pos int
}

func (e event) uid() string {
	if p := e.Props.Get(ical.PropUID); p != nil {
		return p.Value
	}
	return ""
}

// name says which event an error is about.
func (e event) name() string {
	s := fmt.Sprintf("event %d", e.pos+1)
	if sum := e.summary(); sum != "" {
		s += fmt.Sprintf(" (%q)", sum)
	}
	return s
}

func (e event) summary() string {
	p := e.Props.Get(ical.PropSummary)
	if p == nil {
		return ""
	}
	s, err := p.Text()
	if err != nil {
		return p.Value
	}
	return s
}

// allDay reports whether DTSTART is a date.
func (e event) allDay() bool {
	p := e.Props.Get(ical.PropDateTimeStart)
	return p != nil && (p.ValueType() == ical.ValueDate || (p.ValueType() == ical.ValueDefault && len(p.Value) == len("20060102")))
}

// time reads a DTSTART-like property: a date at midnight in loc, a UTC
// time, a time in its TZID zone, or a floating time in loc.
func (e event) time(p *ical.Prop) (time.Time, error) {
	return p.DateTime(e.loc)
}

// entries are the event's occurrences inside w, less those replaced by
// other events (skip).
func (e event) entries(w Window, skip []time.Time) ([]*pb.CalendarEntry, error) {
	if st, _ := e.Status(); st == ical.EventCancelled {
		return nil, nil
	}
	sp := e.Props.Get(ical.PropDateTimeStart)
	if sp == nil {
		return nil, errors.New("no DTSTART")
	}
	start, err := e.time(sp)
	if err != nil {
		return nil, fmt.Errorf("DTSTART: %w", err)
	}
	end, err := e.DateTimeEnd(e.loc)
	if err != nil {
		return nil, fmt.Errorf("DTEND or DURATION: %w", err)
	}
	length := end.Sub(start)
	if length < 0 {
		return nil, fmt.Errorf("ends (%s) before it starts (%s)", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	starts, err := e.occurrences(start, w, skip)
	if err != nil {
		return nil, err
	}
	var out []*pb.CalendarEntry
	for _, s := range starts {
		if ent := e.entry(s, length); ent != nil {
			out = append(out, ent)
		}
	}
	return out, nil
}

// entry is one occurrence starting at s: a date or a range of dates for
// an all-day event, a range of instants for a timed one (nil if it lasts
// no time at all).
func (e event) entry(s time.Time, length time.Duration) *pb.CalendarEntry {
	note := e.summary()
	if r := []rune(note); len(r) > calendar.MaxNote {
		note = string(r[:calendar.MaxNote])
	}
	if e.allDay() {
		days := max(1, int((length+12*time.Hour)/(24*time.Hour))) // 23- or 25-hour days round
		first := s.In(e.loc)
		if days == 1 {
			return &pb.CalendarEntry{Date: first.Format(time.DateOnly), Note: note}
		}
		last := time.Date(first.Year(), first.Month(), first.Day()+days, 0, 0, 0, 0, time.UTC)
		return &pb.CalendarEntry{From: first.Format(time.DateOnly), To: last.Format(time.DateOnly), Note: note}
	}
	if length == 0 {
		return nil
	}
	return &pb.CalendarEntry{
		From: s.UTC().Format(time.RFC3339),
		To:   s.Add(length).UTC().Format(time.RFC3339),
		Note: note,
	}
}

// occurrences are the starts of the event's occurrences that may overlap
// w: DTSTART alone, or its recurrence set (RRULE, RDATE, EXDATE) expanded
// in DTSTART's zone.
func (e event) occurrences(start time.Time, w Window, skip []time.Time) ([]time.Time, error) {
	rule := e.Props.Get(ical.PropRecurrenceRule)
	rdates := e.Props.Values(ical.PropRecurrenceDates)
	if rule == nil && len(rdates) == 0 {
		if start.Before(w.Until) {
			return []time.Time{start}, nil
		}
		return nil, nil
	}
	var set rrule.Set
	set.DTStart(start)
	if rule != nil {
		opt, err := rrule.StrToROptionInLocation(rule.Value, start.Location())
		if err != nil {
			return nil, fmt.Errorf("RRULE: %w", err)
		}
		opt.Dtstart = start
		r, err := rrule.NewRRule(*opt)
		if err != nil {
			return nil, fmt.Errorf("RRULE: %w", err)
		}
		set.RRule(r)
	} else {
		set.RDate(start) // DTSTART is the first occurrence of an RDATE set
	}
	for _, p := range rdates {
		ts, err := e.times(p)
		if err != nil {
			return nil, fmt.Errorf("RDATE: %w", err)
		}
		for _, t := range ts {
			set.RDate(t)
		}
	}
	for _, p := range e.Props.Values(ical.PropExceptionDates) {
		ts, err := e.times(p)
		if err != nil {
			return nil, fmt.Errorf("EXDATE: %w", err)
		}
		for _, t := range ts {
			set.ExDate(t)
		}
	}
	for _, t := range skip {
		set.ExDate(t)
	}
	var out []time.Time
	next := set.Iterator()
	for t, ok := next(); ok && t.Before(w.Until); t, ok = next() {
		out = append(out, t)
		if len(out) > calendar.MaxEntries {
			return nil, fmt.Errorf("recurs more than %d times before %s", calendar.MaxEntries, w.Until.Format(time.DateOnly))
		}
	}
	return trimBefore(out, w.From, e), nil
}

// trimBefore drops the occurrences that end before from: an old
// recurring event keeps only its recent and future occurrences.
func trimBefore(starts []time.Time, from time.Time, e event) []time.Time {
	end, err := e.DateTimeEnd(e.loc)
	start, err2 := e.DateTimeStart(e.loc)
	length := time.Duration(0)
	if err == nil && err2 == nil {
		length = end.Sub(start)
	}
	i := 0
	for i < len(starts) && !starts[i].Add(length).After(from) {
		i++
	}
	return starts[i:]
}

// times reads a property that may list several values (EXDATE, RDATE),
// each as time does.
func (e event) times(p ical.Prop) ([]time.Time, error) {
	var out []time.Time
	for _, v := range strings.Split(p.Value, ",") {
		one := p
		one.Value = strings.TrimSpace(v)
		t, err := e.time(&one)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
