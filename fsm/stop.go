package fsm

import (
	"github.com/raftcron/raftcron/calendar"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// What keeps a slot from firing on purpose: the job's calendars and the
// freezes that match it. The FSM decides it for every scheduled or
// catch-up fire with the state at apply (fire.go), so a calendar changed
// between the leader's plan and the commit decides the slot, on every
// node alike; the API shows the same decision in previews (Stops).

// stopSource is the state a decision reads: the live state when a fire
// applies, or what a read captured (Stops).
type stopSource interface {
	calendarSet(name string) (*calendar.Set, bool)
	// eachFreeze calls fn with every freeze that may match the job, by
	// name, until fn returns false.
	eachFreeze(fn func(freezeItem) bool)
}

// decide says what stops the slot of a job with the stored spec: the
// first exclude calendar that contains it or only calendar that does not
// (a calendar that is missing contains nothing), else a freeze in force
// at the slot that matches the job — one that skips before one that
// defers, each the first by name. deferring: the freeze defers the slot.
func decide(src stopSource, spec *pb.JobSpec, slot int64) (reason string, deferring bool) {
	if refs := spec.GetCalendars(); refs != nil {
		for _, name := range refs.GetExclude() {
			if set, ok := src.calendarSet(name); ok && set.Contains(slot) {
				return ReasonCalendarPrefix + name, false
			}
		}
		for _, name := range refs.GetOnly() {
			if set, ok := src.calendarSet(name); !ok || !set.Contains(slot) {
				return ReasonCalendarPrefix + name, false
			}
		}
	}
	var deferBy string
	src.eachFreeze(func(it freezeItem) bool {
		if slot < it.from || slot >= it.to || !hasLabels(spec, it.freeze.GetSelector()) {
			return true
		}
		if !it.freeze.GetDefer() {
			reason = ReasonFreezePrefix + it.name
			return false
		}
		if deferBy == "" {
			deferBy = it.name
		}
		return true
	})
	if reason == "" && deferBy != "" {
		return ReasonFreezePrefix + deferBy, true
	}
	return reason, false
}

// frozen reports whether a freeze matching the job is in force at t, and
// until when the latest of them lasts.
func frozen(src stopSource, spec *pb.JobSpec, t int64) (until int64, ok bool) {
	src.eachFreeze(func(it freezeItem) bool {
		if t >= it.from && t < it.to && hasLabels(spec, it.freeze.GetSelector()) {
			until, ok = max(until, it.to), true
		}
		return true
	})
	return until, ok
}

func (s *state) calendarSet(name string) (*calendar.Set, bool) {
	it, ok := s.cals.get(name)
	return it.set, ok
}

func (s *state) eachFreeze(fn func(freezeItem) bool) {
	s.freezes.freezes.Ascend(fn)
}

// stops reports whether anything may stop a slot of the job: it has
// calendars, or a freeze exists. Jobs for which it is false fire as before
// without a lookup.
func (s *state) stops(spec *pb.JobSpec) bool {
	return spec.GetCalendars() != nil || s.freezes.freezes.Len() > 0
}

// Stops is what decides a job's slots as a read found it: its calendars,
// compiled, and the freezes that match it. It is immutable and reads no
// state.
type Stops struct {
	spec    *pb.JobSpec // stored form (labels as the FSM keeps them)
	sets    map[string]*calendar.Set
	freezes []freezeItem
}

// Reason says what would stop the slot (Unix seconds): calendar:NAME,
// freeze:NAME, or "" when it fires.
func (st Stops) Reason(slot int64) string {
	if st.spec == nil {
		return ""
	}
	r, _ := decide(st, st.spec, slot)
	return r
}

// Any reports whether anything may stop a slot of the job.
func (st Stops) Any() bool {
	return st.spec.GetCalendars() != nil || len(st.freezes) > 0
}

func (st Stops) calendarSet(name string) (*calendar.Set, bool) {
	set, ok := st.sets[name]
	return set, ok
}

func (st Stops) eachFreeze(fn func(freezeItem) bool) {
	for _, it := range st.freezes {
		if !fn(it) {
			return
		}
	}
}

// Stops reads what decides the slots of the job name; ErrNotFound if there
// is none.
func (f *FSM) Stops(name string) (Stops, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it, ok := f.st.item(name)
	if !ok {
		return Stops{}, fail(ErrNotFound, "job %q not found", name)
	}
	spec := it.job.GetSpec()
	st := Stops{spec: spec}
	if names := refNames(spec.GetCalendars()); len(names) > 0 {
		st.sets = make(map[string]*calendar.Set, len(names))
		for _, n := range names {
			if set, ok := f.st.calendarSet(n); ok {
				st.sets[n] = set
			}
		}
	}
	f.st.eachFreeze(func(fr freezeItem) bool {
		if hasLabels(spec, fr.freeze.GetSelector()) {
			st.freezes = append(st.freezes, fr)
		}
		return true
	})
	return st, nil
}

// FrozenUntil reports whether a freeze matching the job is in force at t
// (Unix seconds), and until when: the scheduler releases a deferred slot
// once none is.
func (f *FSM) FrozenUntil(name string, t int64) (until int64, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it, found := f.st.item(name)
	if !found || f.st.freezes.freezes.Len() == 0 {
		return 0, false
	}
	return frozen(&f.st, it.job.GetSpec(), t)
}
