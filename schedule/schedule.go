// Package schedule turns a job's schedule string (or several) and time zone
// into fire times. robfig/cron parses the standard cron fields and
// descriptors; Quartz's day items, @every and @at are read here, and the
// fire times are computed here, so that daylight-saving transitions follow
// raftcron's rules (see DESIGN.md) and @every slots are the same on every
// leader.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	// The zone database ships inside the binary, so every zone is known
	// even on a host without zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Schedule yields the fire times of a job.
type Schedule interface {
	// Next returns the first fire time strictly after the given instant, or
	// the zero time when the schedule never fires again.
	Next(after time.Time) time.Time
}

// SearchYears bounds how far ahead Next looks, and how soon a schedule must
// fire to be accepted.
const SearchYears = 5

var (
	// ErrTimezonePrefix rejects robfig's TZ= and CRON_TZ= prefixes: a job's
	// zone is its own field, so one spec string never carries two zones.
	ErrTimezonePrefix = errors.New("the zone is the timezone field, not a TZ= prefix")
	// ErrNeverFires rejects specs with no fire time within SearchYears.
	ErrNeverFires = errors.New("never fires within 5 years")
	// ErrSyntax is a malformed spec; most come as a *SyntaxError naming
	// the field at fault.
	ErrSyntax = errors.New("bad cron syntax")
	// ErrEveryInterval rejects @every durations that are not whole seconds
	// of at least one second (robfig would silently round them).
	ErrEveryInterval = errors.New("@every: want a whole number of seconds, at least 1s")
)

// parser accepts an optional leading seconds field, five-field cron and
// descriptors, including @every.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses spec for evaluation in loc (nil means UTC; the host's zone
// is never used).
func Parse(spec string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("%w: empty spec", ErrSyntax)
	}
	upper := strings.ToUpper(spec)
	if strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return nil, ErrTimezonePrefix
	}
	if strings.HasPrefix(spec, "@") {
		return parseDescriptor(spec, loc)
	}
	return parseCron(spec, loc)
}

// parseDescriptor parses a spec starting with "@": robfig's descriptors,
// and @every and @at, which are read here.
func parseDescriptor(spec string, loc *time.Location) (Schedule, error) {
	switch strings.Fields(spec)[0] {
	case "@every":
		return parseEvery(spec, loc)
	case "@at":
		return parseAt(spec, loc)
	}
	parsed, err := parseWith(parser, spec)
	if err != nil {
		return nil, &SyntaxError{Reason: fmt.Sprintf("unknown descriptor %q (want %s)", spec, descriptors)}
	}
	s, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: unsupported schedule kind %T", ErrSyntax, parsed)
	}
	// A descriptor has no field text; robfig's star marks for it agree
	// with cronie's flags (@hourly's hour is a star, @daily's is not).
	star := stars{
		minute: s.Minute&starBit != 0, hour: s.Hour&starBit != 0,
		dom: s.Dom&starBit != 0, dow: s.Dow&starBit != 0,
	}
	return newCronSchedule(s, star, nil, loc), nil
}

// parseWith runs robfig's parser p, which panics on some inputs.
func parseWith(p cron.Parser, spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("parser panicked: %v", r)
		}
	}()
	return p.Parse(spec)
}

// FiresWithin reports whether s fires in (from, from+d].
func FiresWithin(s Schedule, from time.Time, d time.Duration) bool {
	next := s.Next(from)
	return !next.IsZero() && !next.After(from.Add(d))
}

// Validate parses spec for loc and applies CheckFires.
func Validate(spec string, loc *time.Location, now time.Time) error {
	s, err := Parse(spec, loc)
	if err != nil {
		return err
	}
	return CheckFires(s, now)
}

// CheckFires is the rule a job's schedule must pass besides its syntax:
// it fires within SearchYears of now (ErrNeverFires otherwise). An @at
// whose time has passed is accepted: it has fired, or was missed, and has
// no next slot, and a job file applied again after that must not become
// invalid. Each member of a Set is checked alone (a *SetError names the
// first that fails), so one dead spec in a list is not hidden by the rest.
func CheckFires(s Schedule, now time.Time) error {
	switch s := s.(type) {
	case *Set:
		for i, m := range s.members {
			if err := CheckFires(m, now); err != nil {
				return &SetError{Index: i, Err: err}
			}
		}
		return nil
	case *atSchedule:
		if s.passed(now) {
			return nil
		}
	}
	next := s.Next(now)
	if next.IsZero() || next.After(now.AddDate(SearchYears, 0, 0)) {
		return ErrNeverFires
	}
	return nil
}
