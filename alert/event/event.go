// Package event names the alert events, the words a job's notify rules,
// the replicated alerts and every notification use.
package event

// The events, exactly as notify rules and notifications spell them.
const (
	Failed    = "failed"
	Recovered = "recovered"
	Missed    = "missed"
	Late      = "late"
	TooLong   = "too_long"
	TooShort  = "too_short"
	NoSuccess = "no_success"
	Paused    = "paused"
)

// All are the events in the order the docs list them.
var All = []string{Failed, Recovered, Missed, Late, TooLong, TooShort, NoSuccess, Paused}

// Set is a set of events, one bit each.
type Set uint16

// Bit is name's bit, 0 for a name that is no event.
func Bit(name string) Set {
	for i, n := range All {
		if n == name {
			return 1 << i
		}
	}
	return 0
}

// Of is the set of names; names that are no event are left out.
func Of(names []string) Set {
	var s Set
	for _, n := range names {
		s |= Bit(n)
	}
	return s
}

// Has reports whether name is in s.
func (s Set) Has(name string) bool { return s&Bit(name) != 0 }

// Valid reports whether name is an event.
func Valid(name string) bool { return Bit(name) != 0 }
