package schedule

import (
	"errors"
	"fmt"
	"time"
)

// ErrEmptySet rejects a set of schedules with no spec in it.
var ErrEmptySet = errors.New("want at least one schedule")

// Set is the union of several schedules in one zone (a job's `schedules`
// field): it fires at every instant one of them fires, once, even when two
// of them meet. Each member keeps its own rules (fixed or real time on a
// daylight-saving night, @every's epoch grid). A Set is immutable.
type Set struct {
	members []Schedule
}

// SetError locates a refused member of a set: Index is its position in the
// list, Err why it was refused (a *SyntaxError, ErrNeverFires, ...).
type SetError struct {
	Index int
	Err   error
}

func (e *SetError) Error() string { return fmt.Sprintf("schedules[%d]: %v", e.Index, e.Err) }

func (e *SetError) Unwrap() error { return e.Err }

// ParseSet parses every spec for evaluation in loc (nil means UTC). The
// first refused spec is reported as a *SetError naming its index.
func ParseSet(specs []string, loc *time.Location) (*Set, error) {
	return buildSet(specs, loc, Parse)
}

// CachedSet is ParseSet with each spec parsed through the process's cache
// (see Cached), so members shared with other jobs are parsed once.
func CachedSet(specs []string, loc *time.Location) (*Set, error) {
	return buildSet(specs, loc, Cached)
}

// CachedSetInZone is CachedSet for a job's schedules and timezone fields as
// stored: the zone is loaded as LoadLocation does.
func CachedSetInZone(specs []string, zone string) (*Set, error) {
	loc, err := LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	return CachedSet(specs, loc)
}

func buildSet(specs []string, loc *time.Location, parse func(string, *time.Location) (Schedule, error)) (*Set, error) {
	if len(specs) == 0 {
		return nil, ErrEmptySet
	}
	s := &Set{members: make([]Schedule, len(specs))}
	for i, spec := range specs {
		m, err := parse(spec, loc)
		if err != nil {
			return nil, &SetError{Index: i, Err: err}
		}
		s.members[i] = m
	}
	return s, nil
}

// Next returns the earliest of the members' next fire times, or the zero
// time when none fires again.
func (s *Set) Next(after time.Time) time.Time {
	var first time.Time
	for _, m := range s.members {
		if t := m.Next(after); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// ValidateSet parses specs for loc and checks each member as Validate
// does, naming the first one at fault.
func ValidateSet(specs []string, loc *time.Location, now time.Time) error {
	s, err := ParseSet(specs, loc)
	if err != nil {
		return err
	}
	return CheckFires(s, now)
}
