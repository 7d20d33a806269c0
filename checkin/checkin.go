// Package checkin matches the pings of check-in jobs to the slots of
// their schedules. A check-in job runs elsewhere and pings raftcron; its
// schedule says when a ping is due and its grace (expect.start_within) how
// late it may come. The leader matches each ping at its own clock (Match)
// and the FSM checks the match against the time of the entry that carries
// it, so both read the same rule: this package's.
//
// Which slot a ping belongs to, for a ping at now, among the slots after
// the job's cursor (those neither checked in nor recorded missed yet):
//
//  1. the newest slot due by now whose grace has not passed
//     (now <= slot + grace): a ping on time, or late within its grace;
//  2. otherwise the first slot after now, if now is at most its early
//     tolerance before it: the grace, but never more than half the time
//     since the slot before it (or since the cursor), so that a ping
//     cannot be early for one slot while it is merely late for the last;
//  3. otherwise none: the ping is recorded off schedule, a run of its own
//     that no slot owns (a second ping for a slot, one past the grace, one
//     while the job is paused, one far too early).
//
// The slots after the cursor before the matched one are recorded missed
// (no_checkin) with it: no later ping can take them. A job that runs
// longer than its period pings start once per slot, each start taking its
// own slot, and each success naming the run its start opened.
package checkin

import (
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// maxScan caps the slots one match walks. A longer backlog after the
// cursor (the leader has not recorded it missed yet) matches nothing: the
// ping is off schedule, and the scheduler records the backlog.
const maxScan = 10000

// Job is what a match reads of a check-in job.
type Job struct {
	Sched schedule.Schedule
	// Cursor is the job's last evaluated slot, whole Unix seconds.
	Cursor int64
	// After: no slot at or before it (start_at less a nanosecond); zero
	// for none. End: no slot after it, if HasEnd (end_at).
	After  time.Time
	End    int64
	HasEnd bool
	Paused bool
	Grace  time.Duration
}

// JobOf is the check-in job spec describes, whose cursor is cursor and
// whose parsed schedule is sched.
func JobOf(spec *pb.JobSpec, cursor int64, sched schedule.Schedule) Job {
	j := Job{Sched: sched, Cursor: cursor, Paused: spec.GetPaused(), Grace: Grace(spec)}
	if st := spec.GetStartAt(); st != nil {
		j.After = st.AsTime().Add(-time.Nanosecond)
	}
	if e := spec.GetEndAt(); e != nil {
		j.End, j.HasEnd = e.AsTime().Unix(), true
	}
	return j
}

// Grace is how late a ping of the job may come: its stored
// expect.start_within (the API stores one for every check-in job).
func Grace(spec *pb.JobSpec) time.Duration {
	return spec.GetExpect().GetStartWithin().AsDuration()
}

// Match is the slot a ping belongs to and the slots it leaves missed.
type Match struct {
	// Slot is the matched slot, whole Unix seconds; 0: off schedule.
	Slot int64
	// Missed are the slots after the cursor and before Slot; Count 0:
	// none.
	Missed Range
}

// Range is a run of consecutive slots of a schedule.
type Range struct {
	From, To int64
	Count    uint64
}

func (r *Range) add(s int64) {
	if r.Count == 0 {
		r.From = s
	}
	r.To = s
	r.Count++
}

// Find matches a ping at now to a slot of j (the package comment's rule).
func Find(j Job, now time.Time) Match {
	if j.Sched == nil || j.Paused {
		return Match{}
	}
	cursor := j.Cursor
	if cursor <= 0 {
		cursor = now.Unix() - 1 // no cursor: a job from before the run ledger
	}
	after := time.Unix(cursor, 0)
	if j.After.After(after) {
		after = j.After
	}
	var due Range          // every due slot after the cursor
	var penult, next int64 // the due slot before due.To; the first slot after now
	for n := 0; ; n++ {
		t := j.Sched.Next(after)
		if t.IsZero() || j.HasEnd && t.Unix() > j.End {
			break
		}
		if t.After(now) {
			next = t.Unix()
			break
		}
		if n == maxScan {
			return Match{}
		}
		penult = due.To
		due.add(t.Unix())
		after = t
	}
	if due.Count > 0 && !now.After(time.Unix(due.To, 0).Add(j.Grace)) {
		missed := Range{}
		if due.Count > 1 {
			missed = Range{From: due.From, To: penult, Count: due.Count - 1}
		}
		return Match{Slot: due.To, Missed: missed}
	}
	if next == 0 {
		return Match{}
	}
	prev := cursor
	if due.Count > 0 {
		prev = due.To
	}
	early := min(j.Grace, time.Duration(next-prev)*time.Second/2)
	if now.Before(time.Unix(next, 0).Add(-early)) {
		return Match{}
	}
	return Match{Slot: next, Missed: due}
}
