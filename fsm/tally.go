package fsm

import (
	"cmp"
	"hash"
	"slices"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// tallyMinutes is how many minutes of run counts the state keeps: an hour.
const tallyMinutes = 60

// runTally counts what runs did in each of the last tallyMinutes minutes,
// each in the minute of the entry that committed it (its leader-stamped
// time), so every node keeps the same counts and a history limit prunes
// none of them. It is a ring: minute m is kept at m mod tallyMinutes, and
// a count for a newer minute replaces what an hour older held there.
// Nothing the FSM decides reads it; status does (LastHour).
type runTally [tallyMinutes]minuteTally

type minuteTally struct {
	minute                  int64 // Unix minutes
	fires, failures, missed uint64
}

func (m minuteTally) empty() bool { return m.fires == 0 && m.failures == 0 && m.missed == 0 }

// slot is the place of minute in the ring.
func (t *runTally) slot(minute int64) *minuteTally {
	i := minute % tallyMinutes
	if i < 0 {
		i += tallyMinutes
	}
	return &t[i]
}

// add counts into the minute of atNano, unless the ring already holds a
// newer minute there (the count is then over an hour older than the
// newest one, outside every window).
func (t *runTally) add(atNano int64, fires, failures, missed uint64) {
	minute := floorDiv(atNano, 60e9)
	m := t.slot(minute)
	switch {
	case m.minute > minute && !m.empty():
		return
	case m.minute != minute:
		*m = minuteTally{minute: minute}
	}
	m.fires += fires
	m.failures += failures
	m.missed += missed
}

// countRun counts a stored run's change from old (had: it existed), in
// the minute of the entry being applied: a new run is a fire, or the slots
// it records missed; a run that finishes in a failure state is a failure.
func (s *state) countRun(old *pb.Run, had bool, r *pb.Run) {
	if !s.atLeast(version3) {
		return // releases up to ed252bd (version 2) keep no counts; apply as they do
	}
	var fires, failures, missed uint64
	switch {
	case had:
	case r.GetState() == pb.RunState_RUN_STATE_MISSED:
		missed = r.GetMissedCount()
	case r.GetState() == pb.RunState_RUN_STATE_SKIPPED:
		// A rule working as meant: neither a fire nor a slot missed.
	default:
		fires = 1
	}
	if failedState(r.GetState()) && (!had || isOpen(old.GetState())) {
		failures = 1
	}
	if fires+failures+missed > 0 {
		s.tally.add(s.applying, fires, failures, missed)
	}
}

func failedState(st pb.RunState) bool {
	switch st {
	case pb.RunState_RUN_STATE_FAILED, pb.RunState_RUN_STATE_FENCED,
		pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, pb.RunState_RUN_STATE_UNKNOWN:
		return true
	}
	return false
}

// LastHour is what the runs did in the hour up to now: the minute of now
// and the 59 before it.
func (f *FSM) LastHour(now time.Time) *pb.RunCounts {
	return f.RunCounts(now.Add(-(tallyMinutes - 1) * time.Minute).UnixNano())
}

// RunCounts sums what the runs did from the minute of sinceNano on, over
// the minutes the state keeps (the last tallyMinutes).
func (f *FSM) RunCounts(sinceNano int64) *pb.RunCounts {
	f.mu.RLock()
	defer f.mu.RUnlock()
	from := floorDiv(sinceNano, 60e9)
	c := &pb.RunCounts{}
	for _, m := range f.st.tally {
		if m.minute >= from && !m.empty() {
			c.Fires += m.fires
			c.Failures += m.failures
			c.Missed += m.missed
		}
	}
	return c
}

// records is the tally as the snapshot header holds it: the minutes with
// counts, oldest first.
func (t *runTally) records() []*pb.MinuteRunCounts {
	var out []*pb.MinuteRunCounts
	for _, m := range t {
		if !m.empty() {
			out = append(out, &pb.MinuteRunCounts{MinuteUnix: m.minute * 60,
				Counts: &pb.RunCounts{Fires: m.fires, Failures: m.failures, Missed: m.missed}})
		}
	}
	slices.SortFunc(out, func(a, b *pb.MinuteRunCounts) int { return cmp.Compare(a.GetMinuteUnix(), b.GetMinuteUnix()) })
	return out
}

// read restores the tally from the snapshot header's records.
func (t *runTally) read(recs []*pb.MinuteRunCounts) {
	for _, r := range recs {
		c := r.GetCounts()
		t.add(r.GetMinuteUnix()*1e9, c.GetFires(), c.GetFailures(), c.GetMissed())
	}
}

// hash writes the tally into the state hash, if it holds any counts: a
// state without them hashes as before they existed.
func (t *runTally) hash(h hash.Hash) {
	recs := t.records()
	if len(recs) == 0 {
		return
	}
	writeUint(h, uint64(len(recs)))
	for _, r := range recs {
		c := r.GetCounts()
		writeUint(h, uint64(r.GetMinuteUnix()))
		writeUint(h, c.GetFires())
		writeUint(h, c.GetFailures())
		writeUint(h, c.GetMissed())
	}
}
