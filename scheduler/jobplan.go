package scheduler

import (
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/failpoint"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Planning limits. They bound the work one job can cause in one tick, so a
// single job with a huge backlog never delays the others.
const (
	// OnTime is how late a slot may be and still count as on time: fired
	// as SCHEDULED and never handled as catch-up. It absorbs the loop's
	// own latency (a wake-up, a commit) so that a slot is not "missed"
	// under catch-up policy none just because the tick ran a bit late.
	OnTime = 2 * time.Second
	// MaxCatchupPerTick caps the catch-up fires of one job in one tick
	// (policy all, overlap allow). The rest wait for the next tick, which
	// follows at once; slots that leave the window meanwhile are recorded
	// missed (catchup_window).
	MaxCatchupPerTick = 100
	// maxScan caps the slots one plan walks. A job whose backlog is longer
	// (a per-second job after a long outage) has it recorded missed in
	// pieces of this size, one per tick.
	maxScan = 10000
	// heldRecheck re-plans a job that waits for its open run even if no
	// change notification arrives: a safety net, not the normal path.
	heldRecheck = time.Minute
)

// Reasons recorded with the slots the scheduler gives up.
const (
	reasonCatchupWindow = "catchup_window"
	reasonCatchupPolicy = "catchup_policy"
	reasonPaused        = fsm.ReasonPaused
)

// planInput is everything planJob may look at. It is a pure function of it.
type planInput struct {
	job    *pb.Job
	status *pb.JobStatus
	// open are the job's open runs (DISPATCHED or RETRYING), oldest first.
	open []*pb.Run
	// sched is the job's parsed schedule; nil when it does not parse, which
	// leaves the job with no slots (its open runs are still handled).
	sched schedule.Schedule
	now   time.Time
	// term and self identify this leader: attempts of an earlier term are
	// orphans, attempts of this term by self were committed here.
	term uint64
	self string
	// known reports whether this leader has an attempt in hand (handed to
	// its hand-off, outcome not yet committed).
	known func(token uint64) bool
	// lost reports whether an attempt of this term was lost with its
	// remote worker and its re-dispatch is not decided yet.
	lost func(token uint64) bool
	// frozen reports whether a freeze matching the job is in force now,
	// and until when; nil: none is.
	frozen func() (until int64, ok bool)
}

// plan is what to do about one job now.
type plan struct {
	fires  []*pb.Fire
	misses []*pb.Miss
	// adopt are open runs whose current attempt this leader committed in
	// this term but never dispatched: the FireBatch's Apply returned an
	// error, yet the entry was committed. They are dispatched as they are.
	adopt []*pb.Run
	// expire are the outcomes of a check-in job's runs still open at its
	// deadline (checkin.go).
	expire []*pb.Completion
	// wake is when the job needs planning again; zero means not until it
	// changes.
	wake time.Time
	// endPause is the end of the job's pause, when it has come: the leader
	// proposes to resume the job (end_pause); 0 otherwise.
	endPause int64
}

func (p *plan) wakeAt(t time.Time) {
	if p.wake.IsZero() || t.Before(p.wake) {
		p.wake = t
	}
}

func (p *plan) busy() bool {
	return len(p.fires) > 0 || len(p.misses) > 0 || len(p.adopt) > 0 || len(p.expire) > 0
}

// planJob decides the fires and misses of one job at in.now:
//
//  1. Open runs: an orphan (DISPATCHED, attempt of an earlier term) is
//     re-dispatched; a RETRYING run whose backoff has passed is retried.
//     While an orphan, an attempt lost with its worker or a re-dispatched
//     attempt is unresolved, the job's new slots wait (G4: the orphan goes
//     first, and its outcome is known before any newer slot of the job
//     fires).
//  2. A buffered slot (overlap buffer_one) fires once no run is open; while
//     one is, on-time slots still go to the FSM, which skips them.
//  3. Due slots after the cursor, within start_at/end_at, go through the
//     pause state, the catch-up window and policy, and the overlap policy.
//     A slot is due once its dispatch time (the slot plus its jitter) has
//     come.
//  4. A running backfill's next slots (backfill.go).
//
// A check-in job fires nothing: its slots without a ping are missed once
// their grace has passed, and its runs open past the deadline fail
// (planCheckin).
func planJob(in planInput) plan {
	var p plan
	if in.job == nil || in.job.GetSpec() == nil {
		return p
	}
	if p.planRuns(in) {
		p.wakeAt(in.now.Add(heldRecheck))
		return p
	}
	if in.job.GetSpec().GetCheckin() != nil {
		p.planCheckin(in)
		return p
	}
	if b := in.status.GetBufferedSlotUnix(); b != 0 && len(in.open) == 0 {
		// The buffered slot is older than any due one: it goes alone.
		p.fires = append(p.fires, slotFire(in.job, b, pb.FireKind_FIRE_KIND_SCHEDULED))
		return p
	}
	if p.planDeferred(in) {
		return p
	}
	p.planSlots(in)
	p.planBackfill(in)
	return p
}

// planRuns handles the open runs and reports whether new slots must wait.
// A check-in run is not this leader's to dispatch, whoever committed it.
func (p *plan) planRuns(in planInput) (hold bool) {
	for _, r := range in.open {
		if r.GetKind() == pb.FireKind_FIRE_KIND_CHECKIN {
			continue
		}
		cur := fsm.CurrentAttempt(r)
		switch r.GetState() {
		case pb.RunState_RUN_STATE_DISPATCHED:
			if cur == nil {
				continue
			}
			switch {
			case cur.GetTerm() < in.term:
				p.fires = append(p.fires, runFire(r, pb.FireKind_FIRE_KIND_REDISPATCH))
				hold = true
			case cur.GetTerm() == in.term && in.lost != nil && in.lost(cur.GetToken()):
				hold = true // its re-dispatch is on its way (lost.go): it goes first
			case cur.GetTerm() == in.term && cur.GetNodeId() == in.self &&
				(in.known == nil || !in.known(cur.GetToken())):
				p.adopt = append(p.adopt, r)
			}
			if cur.GetKind() == pb.FireKind_FIRE_KIND_REDISPATCH {
				hold = true
			}
		case pb.RunState_RUN_STATE_RETRYING:
			at := time.Unix(0, r.GetNextAttemptAtUnixNano())
			if at.After(in.now) {
				p.wakeAt(at)
				continue
			}
			p.fires = append(p.fires, runFire(r, pb.FireKind_FIRE_KIND_RETRY))
		}
	}
	return hold
}

// planDeferred releases a slot a deferring freeze held back (the FSM's
// status.deferred_slot_unix) once no freeze matching the job is in force:
// a catch-up fire of that slot, alone, older than any due one. While a
// freeze is, the job wakes when it ends. It reports whether the release
// was planned.
func (p *plan) planDeferred(in planInput) bool {
	d := in.status.GetDeferredSlotUnix()
	if d == 0 {
		return false
	}
	if in.frozen != nil {
		if until, ok := in.frozen(); ok {
			p.wakeAt(time.Unix(until, 0))
			return false
		}
	}
	p.fires = append(p.fires, slotFire(in.job, d, pb.FireKind_FIRE_KIND_CATCHUP))
	return true
}

// planSlots handles the job's due slots.
func (p *plan) planSlots(in planInput) {
	if in.sched == nil {
		return
	}
	wv := newWalk(in)
	w := &wv
	spec := in.job.GetSpec()
	if spec.GetPaused() {
		if until := in.status.GetPause().GetUntilUnix(); until > 0 {
			p.planPauseEnd(in, w, until)
			return
		}
		w.run(func(s int64) bool { w.windowMiss.add(s); return true })
		p.addMiss(in.job, &w.windowMiss, reasonPaused)
		p.finishWalk(in, w)
		return
	}
	// The policy and window are the stored ones: the API stores them
	// filled in (jobspec.Normalize), so the scheduler keeps no defaults.
	switch spec.GetCatchup().GetPolicy() {
	case pb.CatchupPolicy_CATCHUP_POLICY_LATEST:
		w.latest()
	case pb.CatchupPolicy_CATCHUP_POLICY_NONE:
		w.none()
	default:
		w.all(MaxCatchupPerTick)
	}
	p.addMiss(in.job, &w.windowMiss, reasonCatchupWindow)
	p.addMiss(in.job, &w.policyMiss, reasonCatchupPolicy)
	fire := w.fire
	if spec.GetOverlap() != pb.Overlap_OVERLAP_ALLOW && len(fire) > 0 &&
		(len(fire) > 1 || !w.onTime(fire[0]) || catchingUp(in.open)) {
		// Catch-up of a job whose runs must not overlap: one slot at a
		// time, and only once nothing of the job is open, so that each
		// caught-up slot is dispatched rather than skipped, in order. A
		// slot that comes due while the catch-up is still running joins
		// its queue: the overlap policy is about the job's own runs
		// running long, not about the scheduler catching up. Other
		// on-time slots go to the FSM as they are: it applies the
		// overlap policy to them.
		if len(in.open) > 0 {
			fire = nil
			w.more = false // nothing more can happen until the run ends
			p.wakeAt(in.now.Add(heldRecheck))
		} else {
			fire = fire[:1]
		}
	}
	var newest int64
	if len(w.fire) > 0 {
		newest = w.fire[len(w.fire)-1]
	}
	for _, s := range fire {
		// Only the newest due slot is on schedule; older ones are a backlog,
		// even when a late tick leaves them within OnTime.
		kind := pb.FireKind_FIRE_KIND_CATCHUP
		if w.onTime(s) && s == newest && !w.more {
			kind = pb.FireKind_FIRE_KIND_SCHEDULED
		}
		f := slotFire(in.job, s, kind)
		if w.jitter > 0 {
			f.JitterMs = uint32(w.delay(s) / time.Millisecond)
		}
		p.fires = append(p.fires, f)
	}
	p.finishWalk(in, w)
}

// planPauseEnd plans a job paused until a given end: the slots that will
// be out of the catch-up window by then are recorded missed (paused) now;
// the others wait for the end, when the catch-up policy decides them, as
// after an outage. Once the end has come, the leader proposes it.
func (p *plan) planPauseEnd(in planInput, w *walk, until int64) {
	end := time.Unix(until, 0)
	lost := end.Add(-w.window) // a slot at or before it is out of the window at the end
	held := false
	w.run(func(s int64) bool {
		if time.Unix(s, 0).After(lost) {
			held = true
			return false
		}
		w.windowMiss.add(s)
		return true
	})
	p.addMiss(in.job, &w.windowMiss, reasonPaused)
	if w.more && !held {
		p.wakeAt(in.now) // a long backlog, recorded in pieces
		return
	}
	if end.After(in.now) {
		p.wakeAt(end)
		return
	}
	p.endPause = until
	p.wakeAt(in.now.Add(refusedCooldown)) // proposed again unless it committed meanwhile
}

// catchingUp reports whether a run of the job is open that the scheduler
// fired late: a catch-up run, or a slot that was already a second or more
// overdue when it was committed (the last of a backlog, fired as on time).
// Slots coming due meanwhile queue behind it instead of being skipped.
func catchingUp(open []*pb.Run) bool {
	for _, r := range open {
		late := r.GetCreatedAtUnixNano() - r.GetSlotUnix()*int64(time.Second) - int64(r.GetJitterMs())*int64(time.Millisecond)
		if r.GetKind() == pb.FireKind_FIRE_KIND_CATCHUP || late >= int64(time.Second) {
			return true
		}
	}
	return false
}

// finishWalk sets the wake-up for the slots the walk did not reach.
func (p *plan) finishWalk(in planInput, w *walk) {
	if w.more {
		p.wakeAt(in.now)
		return
	}
	if w.future != 0 {
		p.wakeAt(time.Unix(w.future, 0).Add(w.delay(w.future)))
	}
}

func (p *plan) addMiss(job *pb.Job, r *slotRange, reason string) {
	if r.count == 0 {
		return
	}
	p.misses = append(p.misses, &pb.Miss{
		Job:          job.GetSpec().GetName(),
		Generation:   job.GetGeneration(),
		FromSlotUnix: r.from,
		ToSlotUnix:   r.to,
		Count:        r.count,
		Reason:       reason,
	})
}

// slotRange is a run of consecutive slots given up for one reason.
type slotRange struct {
	from, to int64
	count    uint64
}

func (r *slotRange) add(s int64) {
	if r.count == 0 {
		r.from = s
	}
	r.to = s
	r.count++
}

// walk enumerates a job's due slots (after the cursor and start_at, up to
// now and end_at) and sorts them into misses and fires.
type walk struct {
	sched schedule.Schedule
	now   int64 // whole seconds: a slot is due once now >= slot
	nowT  time.Time
	// job and jitter: a slot's dispatch waits schedule.Jitter(job, slot,
	// jitter) past it (0: none, at no cost).
	job    string
	jitter time.Duration
	// window: slots with now - slot < window may still fire.
	window time.Duration
	after  time.Time
	// end is the last allowed slot (end_at), if hasEnd.
	end    int64
	hasEnd bool

	windowMiss, policyMiss slotRange
	fire                   []int64
	// more: the walk stopped before reaching now; plan again at once.
	more bool
	// future: the first slot after now, 0 if none (or not reached).
	future int64
}

// newWalk returns the walk by value: planned once per job per tick, it
// stays on the stack.
func newWalk(in planInput) walk {
	w := walk{
		sched:  in.sched,
		now:    in.now.Unix(),
		nowT:   in.now,
		job:    in.job.GetSpec().GetName(),
		jitter: in.job.GetSpec().GetJitter().AsDuration(),
		window: max(in.job.GetSpec().GetCatchup().GetWindow().AsDuration(), OnTime),
	}
	w.after, w.end, w.hasEnd = slotBounds(in)
	w.after = time.Unix(failpoint.RewindCursor(in.job.GetSpec().GetName(), w.after.Unix()), 0)
	return w
}

// slotBounds: the job's next slot is the first one after after, and none
// may come after end (if hasEnd).
func slotBounds(in planInput) (after time.Time, end int64, hasEnd bool) {
	spec := in.job.GetSpec()
	cursor := in.status.GetCursorUnix()
	if cursor <= 0 {
		// No cursor (a job from before the run ledger): fire from now on.
		cursor = in.now.Unix() - 1
	}
	after = time.Unix(cursor, 0)
	if st := spec.GetStartAt(); st != nil {
		// Slots before start_at are not slots of the job: never proposed,
		// never recorded.
		if from := st.AsTime().Add(-time.Nanosecond); from.After(after) {
			after = from
		}
	}
	if e := spec.GetEndAt(); e != nil {
		end, hasEnd = e.AsTime().Unix(), true
	}
	return after, end, hasEnd
}

// firstWake is when a job with no open run and no buffered slot next needs
// planning: its next slot (a check-in job's: once its grace has passed),
// or in.now if that is due; zero if it has none. It is planJob's wake-up
// for such a job without planning the due slots, for rebuilding the heap
// of a million jobs.
func firstWake(in planInput) time.Time {
	if in.sched == nil {
		return time.Time{}
	}
	after, end, hasEnd := slotBounds(in)
	next := in.sched.Next(after)
	var at time.Time
	if !next.IsZero() && !(hasEnd && next.Unix() > end) {
		spec := in.job.GetSpec()
		at = next.Add(slotDelay(spec.GetName(), next.Unix(), spec.GetJitter().AsDuration()))
		if spec.GetCheckin() != nil && !spec.GetPaused() {
			at = missableAt(next, spec)
		}
	}
	if until := in.status.GetPause().GetUntilUnix(); until > 0 && in.job.GetSpec().GetPaused() {
		if end := time.Unix(until, 0); at.IsZero() || end.Before(at) {
			at = end // the leader ends the pause then
		}
	}
	switch {
	case at.IsZero():
		return time.Time{}
	case at.After(in.now):
		return at
	default:
		return in.now
	}
}

// run calls visit for each due slot in order until visit returns false.
func (w *walk) run(visit func(s int64) bool) {
	t := w.after
	for n := 0; ; n++ {
		next := w.sched.Next(t)
		if next.IsZero() {
			return
		}
		s := next.Unix()
		if w.hasEnd && s > w.end {
			return
		}
		if w.jitter > 0 && time.Unix(s, 0).Add(w.delay(s)).After(w.nowT) || w.jitter == 0 && s > w.now {
			w.future = s
			return
		}
		if n == maxScan {
			w.more = true
			return
		}
		if !visit(s) {
			w.more = true
			return
		}
		t = time.Unix(s, 0)
	}
}

func (w *walk) age(s int64) time.Duration { return w.nowT.Sub(time.Unix(s, 0)) }

// onTime: the slot is less than OnTime past its dispatch time (the slot
// plus its jitter).
func (w *walk) onTime(s int64) bool { return w.age(s)-w.delay(s) < OnTime }

// inWindow: the catch-up window counts from the slot's nominal time.
func (w *walk) inWindow(s int64) bool { return w.age(s) < w.window }

// delay is the slot's jitter: how long after it its dispatch waits.
func (w *walk) delay(s int64) time.Duration { return slotDelay(w.job, s, w.jitter) }

// slotDelay is schedule.Jitter for a job's slot, 0 without calling it when
// the job has no jitter.
func slotDelay(job string, slot int64, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	return schedule.Jitter(job, time.Unix(slot, 0), jitter)
}

// all: every slot in the window fires, oldest first, at most limit of them.
func (w *walk) all(limit int) {
	w.run(func(s int64) bool {
		if !w.inWindow(s) {
			w.windowMiss.add(s)
			return true
		}
		if len(w.fire) == limit {
			return false
		}
		w.fire = append(w.fire, s)
		return true
	})
}

// latest: only the newest due slot fires, if it is in the window.
func (w *walk) latest() {
	var last int64
	have := false
	w.run(func(s int64) bool {
		if have {
			w.missPolicy(last)
		}
		last, have = s, true
		return true
	})
	switch {
	case !have:
	case w.more:
		w.missPolicy(last)
	case w.inWindow(last):
		w.fire = append(w.fire, last)
	default:
		w.windowMiss.add(last)
	}
}

// none: only on-time slots fire.
func (w *walk) none() {
	w.run(func(s int64) bool {
		if w.onTime(s) {
			w.fire = append(w.fire, s)
		} else {
			w.missPolicy(s)
		}
		return true
	})
}

// missPolicy records a slot the policy gives up: outside the window it is a
// window miss, inside a policy miss. Window misses are always older.
func (w *walk) missPolicy(s int64) {
	if w.inWindow(s) {
		w.policyMiss.add(s)
	} else {
		w.windowMiss.add(s)
	}
}

func slotFire(job *pb.Job, slot int64, kind pb.FireKind) *pb.Fire {
	return &pb.Fire{
		Job:        job.GetSpec().GetName(),
		Generation: job.GetGeneration(),
		SlotUnix:   slot,
		Kind:       kind,
	}
}

func runFire(r *pb.Run, kind pb.FireKind) *pb.Fire {
	return &pb.Fire{
		Job:        r.GetJob(),
		Generation: r.GetGeneration(),
		SlotUnix:   r.GetSlotUnix(),
		Kind:       kind,
		RunId:      r.GetId(),
	}
}

// jobSchedule is the job's parsed schedule (or set of them), from the
// process's one cache: a heap rebuild over a million jobs and every tick
// neither parse a spec again nor keep a parsed copy per job.
func jobSchedule(job *pb.Job) (schedule.Schedule, error) {
	spec := job.GetSpec()
	if !jobspec.HasSchedule(spec) {
		return nil, nil // a job that runs after others only: no slots
	}
	return jobspec.ScheduleOf(spec)
}
