// Package calendar turns a calendar's entries — dates, ranges and weekly
// windows in a time zone — into a Set that answers whether an instant is
// in the calendar. It is a pure function of the calendar as the cluster
// stores it, zone offsets included: the state machine and every node's
// scheduler and API evaluate a calendar alike, whatever zone data their
// hosts have (DESIGN.md).
package calendar

import (
	"slices"
	"sort"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Limits of one calendar: every calendar travels in the Raft log and is
// held by every node.
const (
	// MaxEntries bounds a calendar's entries (an import's expansion).
	MaxEntries = 10_000
	// MaxNote bounds an entry's note and a calendar's description.
	MaxNote = 256
)

// Set is a compiled calendar: the instants it contains. It is immutable
// and safe for concurrent use.
type Set struct {
	zone zone
	// spans are the dates and ranges as instants, sorted and merged.
	spans []span
	// windows are the weekly windows, evaluated on wall time.
	windows []window
}

// span is the instants [from, to), Unix seconds.
type span struct{ from, to int64 }

// window is a weekly window: on each of its days, the wall times [start,
// end) in seconds of the day; an end at or before the start runs into the
// next day.
type window struct {
	days       uint8 // bit d: weekday d, 0 = Sunday
	start, end int32
}

const day = 86400

// Contains reports whether the calendar contains the instant t (Unix
// seconds). A nil Set contains nothing.
func (s *Set) Contains(t int64) bool {
	if s == nil {
		return false
	}
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].to > t })
	if i < len(s.spans) && s.spans[i].from <= t {
		return true
	}
	if len(s.windows) == 0 {
		return false
	}
	wall := t + int64(s.zone.offset(t))
	d := floorDiv(wall, day)
	sod := int32(wall - d*day)
	wd := uint8((d + 4) % 7) // 1970-01-01 was a Thursday
	if wd >= 7 {
		wd -= 7
	}
	prev := (wd + 6) % 7
	for _, w := range s.windows {
		if w.contains(wd, prev, sod) {
			return true
		}
	}
	return false
}

func (w window) contains(wd, prev uint8, sod int32) bool {
	on := w.days&(1<<wd) != 0
	if w.end > w.start {
		return on && sod >= w.start && sod < w.end
	}
	return (on && sod >= w.start) || (w.days&(1<<prev) != 0 && sod < w.end)
}

// Compile builds the Set of a calendar spec evaluated with the zone
// offsets z (nil: UTC). The error is an Errors naming each broken field.
func Compile(spec *pb.CalendarSpec, z *pb.ZoneOffsets) (*Set, error) {
	var errs Errors
	zn, err := zoneOf(z)
	if err != nil {
		errs.add("zone", "%v", err)
		return nil, errs
	}
	s := &Set{zone: zn}
	entries := spec.GetEntries()
	if len(entries) > MaxEntries {
		errs.add("entries", "at most %d entries, got %d", MaxEntries, len(entries))
		return nil, errs
	}
	for i, e := range entries {
		s.add(&errs, entryField(i), e)
		if len(errs) >= maxErrors {
			break
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	s.spans = merge(s.spans)
	return s, nil
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return 0
	})
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.from <= last.to {
			last.to = max(last.to, sp.to)
			continue
		}
		out = append(out, sp)
	}
	return slices.Clip(out)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
