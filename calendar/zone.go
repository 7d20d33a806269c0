package calendar

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The zone offsets a calendar is stored with cover these years; past the
// last transition the last offset holds. Zone rules change a few times a
// decade, and a calendar applied again takes the node's newer rules.
var (
	offsetsFrom  = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	offsetsUntil = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

const (
	// maxTransitions bounds a stored zone: about 260 for a zone with
	// daylight saving time through 2099.
	maxTransitions = 2048
	// maxOffset bounds an offset from UTC (the widest in use are -12h and
	// +14h).
	maxOffset = 18 * 3600
)

// Offsets reads loc's UTC offsets from 1970 to 2100 from this host's zone
// database: the form a calendar is stored with, so that every node
// evaluates it alike (Calendar.zone). Periods that differ only in name
// are one.
func Offsets(loc *time.Location) *pb.ZoneOffsets {
	t := offsetsFrom.In(loc)
	_, off := t.Zone()
	z := &pb.ZoneOffsets{OffsetsSeconds: []int32{int32(off)}}
	for len(z.TransitionsUnix) < maxTransitions {
		if t = nextPeriod(t); t.IsZero() {
			break
		}
		if _, off := t.Zone(); int32(off) != z.OffsetsSeconds[len(z.OffsetsSeconds)-1] {
			z.TransitionsUnix = append(z.TransitionsUnix, t.Unix())
			z.OffsetsSeconds = append(z.OffsetsSeconds, int32(off))
		}
	}
	if len(z.TransitionsUnix) == 0 && z.OffsetsSeconds[0] == 0 {
		return nil // UTC, or a zone that is UTC throughout
	}
	return z
}

// nextPeriod is the start of the zone period after t's, or the zero time
// if none starts before offsetsUntil.
func nextPeriod(t time.Time) time.Time {
	_, end := t.ZoneBounds()
	if end.After(t) || end.IsZero() {
		if !end.Before(offsetsUntil) {
			return time.Time{}
		}
		return end.In(t.Location())
	}
	// Go's periods of a zone's rule for future years can end before t
	// (at a year's end): find the next change of offset by stepping.
	_, off := t.Zone()
	const step = 6 * time.Hour
	for u := t.Add(step); u.Before(offsetsUntil); u = u.Add(step) {
		if _, o := u.Zone(); o != off {
			lo, hi := u.Add(-step).Unix(), u.Unix() // offset off at lo, o at hi
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				if _, m := time.Unix(mid, 0).In(t.Location()).Zone(); m == off {
					lo = mid
				} else {
					hi = mid
				}
			}
			return time.Unix(hi, 0).In(t.Location())
		}
	}
	return time.Time{}
}

// zone is a stored zone: offs[i] holds from trans[i-1] (or always) until
// trans[i] (or forever).
type zone struct {
	trans []int64
	offs  []int32
}

// zoneOf checks a stored zone; nil is UTC.
func zoneOf(z *pb.ZoneOffsets) (zone, error) {
	trans, offs := z.GetTransitionsUnix(), z.GetOffsetsSeconds()
	if len(trans) == 0 && len(offs) == 0 {
		return zone{offs: []int32{0}}, nil
	}
	switch {
	case len(offs) != len(trans)+1:
		return zone{}, fmt.Errorf("%d offsets for %d transitions: want one more offset than transitions", len(offs), len(trans))
	case len(trans) > maxTransitions:
		return zone{}, fmt.Errorf("at most %d transitions, got %d", maxTransitions, len(trans))
	}
	for i, t := range trans {
		if i > 0 && t <= trans[i-1] {
			return zone{}, errors.New("transitions must strictly increase")
		}
	}
	for _, o := range offs {
		if o < -maxOffset || o > maxOffset {
			return zone{}, fmt.Errorf("offset %ds is beyond %dh of UTC", o, maxOffset/3600)
		}
	}
	return zone{trans: trans, offs: offs}, nil
}

// period is the index of the offset in force at t.
func (z zone) period(t int64) int {
	return sort.Search(len(z.trans), func(i int) bool { return z.trans[i] > t })
}

// offset is the zone's offset from UTC at the instant t, in seconds.
func (z zone) offset(t int64) int32 {
	return z.offs[z.period(t)]
}

// instant is the first instant whose wall time in the zone is wall or
// later (wall: seconds since 1970-01-01 00:00 on the zone's clock). A wall
// time that occurs twice (the clock set back) is its first occurrence; one
// that does not occur (the clock set forward over it) is the transition.
func (z zone) instant(wall int64) int64 {
	// Within a period the wall clock runs with real time, so its first
	// instant at or after wall is found by arithmetic; the periods are
	// tried in order from one safely before wall.
	for i := z.period(wall - 2*day); i < len(z.offs); i++ {
		start, end := int64(math.MinInt64), int64(math.MaxInt64)
		if i > 0 {
			start = z.trans[i-1]
		}
		if i < len(z.trans) {
			end = z.trans[i]
		}
		if t := max(start, wall-int64(z.offs[i])); t < end {
			return t
		}
	}
	return wall - int64(z.offs[len(z.offs)-1]) // not reached: the last period is unbounded
}
