package schedule

import "time"

// Interval is the interval between the slots of an @every schedule, and
// false for any other kind; for a Set, the shortest interval among its
// @every members. A job's jitter must stay below it, or one slot's dispatch
// would wait for the one before it.
func Interval(s Schedule) (time.Duration, bool) {
	switch s := s.(type) {
	case *everySchedule:
		return time.Duration(s.period) * time.Second, true
	case *Set:
		var shortest time.Duration
		found := false
		for _, m := range s.members {
			if d, ok := Interval(m); ok && (!found || d < shortest) {
				shortest, found = d, true
			}
		}
		return shortest, found
	}
	return 0, false
}
