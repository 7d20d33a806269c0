package alert

import (
	"container/heap"
	"time"

	"github.com/raftcron/raftcron/alert/event"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// Bounds of one evaluation.
const (
	// maxChecks is the most checks one check_alerts carries.
	maxChecks = 500
	// quiet is how long a check already proposed is not proposed again:
	// the state machine raises nothing twice, this only keeps a check it
	// refuses (the channel is gone, say) from filling the log.
	quiet = time.Minute
)

// plans are the leader's timers for the expectations that have no entry
// of their own: each job's next late deadline (its next slot +
// start_within) and its no_success deadline. An item goes stale when its
// job is planned again (ver); a due item is judged against the state
// read then, never against what was planned.
type plans struct {
	items    itemHeap
	ver      map[string]uint64
	proposed map[string]time.Time
}

type planItem struct {
	at    time.Time
	job   string
	event string
	slot  int64
	ver   uint64
}

func newPlans() *plans {
	return &plans{ver: map[string]uint64{}, proposed: map[string]time.Time{}}
}

// subscribed are the events some rule of the job asks for: its own
// notify entries and the cluster's rules whose selector it matches.
func subscribed(spec *pb.JobSpec, rules []*pb.NotifyRule) event.Set {
	var s event.Set
	for _, n := range spec.GetNotify() {
		s |= event.Of(n.GetOn())
	}
	for _, r := range rules {
		if fsm.SpecHasLabels(spec, r.GetSelector()) {
			s |= event.Of(r.GetOn())
		}
	}
	return s
}

// plan (re)plans a job's timers from its stored state; a job without
// expectations, or whose rules ask for none of these events, gets none.
func (p *plans) plan(sj fsm.StoredJob, rules []*pb.NotifyRule) {
	spec, st := sj.Job.GetSpec(), sj.Status
	name := spec.GetName()
	p.ver[name]++
	e := spec.GetExpect()
	if e == nil || spec.GetPaused() {
		return
	}
	subs := subscribed(spec, rules)
	// A check-in job's start_within is its pings' grace: a slot past it is
	// missed (no_checkin), never late.
	if e.GetStartWithin() != nil && subs.Has(event.Late) && spec.GetCheckin() == nil {
		p.planLate(spec, max(st.GetCursorUnix(), st.GetLateSlotUnix()))
	}
	if e.GetSuccessWithin() != nil && subs.Has(event.NoSuccess) {
		p.push(planItem{at: time.Unix(0, fsm.NoSuccessDue(sj.Job, st)), job: name, event: event.NoSuccess})
	}
}

// planLate plans the late deadline of the job's first slot after the
// second after.
func (p *plans) planLate(spec *pb.JobSpec, after int64) {
	sched, err := schedule.CachedInZone(spec.GetSchedule(), spec.GetTimezone())
	if err != nil {
		return
	}
	next := sched.Next(time.Unix(after, 0))
	if next.IsZero() {
		return
	}
	// Late is dispatched after slot + start_within: due a nanosecond on.
	p.push(planItem{at: next.Add(spec.GetExpect().GetStartWithin().AsDuration() + time.Nanosecond), job: spec.GetName(), event: event.Late, slot: next.Unix()})
}

func (p *plans) push(it planItem) {
	it.ver = p.ver[it.job]
	heap.Push(&p.items, it)
}

func (p *plans) forget(name string) { delete(p.ver, name) }

// fresh reports whether key was proposed within quiet of now, and if not
// notes that it is being proposed now.
func (p *plans) fresh(key string, now time.Time) bool {
	if at, ok := p.proposed[key]; ok && now.Sub(at) < quiet {
		return true
	}
	p.proposed[key] = now
	return false
}

// sweep forgets the proposals older than quiet.
func (p *plans) sweep(now time.Time) {
	for k, at := range p.proposed {
		if now.Sub(at) >= quiet {
			delete(p.proposed, k)
		}
	}
}

// evaluate returns the checks due at now.
func (t *term) evaluate(now time.Time) []*pb.AlertCheck {
	st := t.a.cfg.State
	if !st.AlertsActive() {
		return nil
	}
	rules := st.NotifyRules(nil)
	t.replan(rules)
	p := t.plans
	p.sweep(now)
	checks := p.due(st, rules, now)
	for _, c := range st.TooLongDue(now.UnixNano(), maxChecks) {
		if len(checks) < maxChecks && !p.fresh("too_long/"+c.GetRunId(), now) {
			checks = append(checks, c)
		}
	}
	return append(checks, p.reminders(st, rules, now, maxChecks-len(checks))...)
}

// replan plans the jobs a registry write changed, or every job.
func (t *term) replan(rules []*pb.NotifyRule) {
	all, names := t.takeDirty()
	st := t.a.cfg.State
	if all {
		t.plans = newPlans()
		st.StoredJobs(func(sj fsm.StoredJob) bool {
			t.plans.plan(sj, rules)
			return true
		})
		return
	}
	for _, n := range names {
		sj, err := st.StoredJob(n)
		if err != nil {
			t.plans.forget(n)
			continue
		}
		t.plans.plan(sj, rules)
	}
}

// due pops the timers that are due and turns those that still hold into
// checks, planning each job's next timer.
func (p *plans) due(st State, rules []*pb.NotifyRule, now time.Time) []*pb.AlertCheck {
	var checks []*pb.AlertCheck
	for p.items.Len() > 0 && !p.items[0].at.After(now) && len(checks) < maxChecks {
		it := heap.Pop(&p.items).(planItem)
		if it.ver != p.ver[it.job] {
			continue
		}
		sj, err := st.StoredJob(it.job)
		if err != nil {
			continue
		}
		spec, status := sj.Job.GetSpec(), sj.Status
		switch it.event {
		case event.Late:
			if status.GetCursorUnix() >= it.slot || status.GetLateSlotUnix() >= it.slot {
				// Dispatched (or missed, or judged) in time: the next slot.
				p.planLate(spec, max(status.GetCursorUnix(), status.GetLateSlotUnix()))
				continue
			}
			if !p.fresh("late/"+it.job+"/"+time.Unix(it.slot, 0).String(), now) {
				checks = append(checks, &pb.AlertCheck{Job: it.job, Event: event.Late, SlotUnix: it.slot})
			}
			p.planLate(spec, it.slot)
		case event.NoSuccess:
			due := time.Unix(0, fsm.NoSuccessDue(sj.Job, status))
			if due.After(now) {
				p.push(planItem{at: due, job: it.job, event: event.NoSuccess})
				continue
			}
			if !p.fresh("no_success/"+it.job, now) {
				checks = append(checks, &pb.AlertCheck{Job: it.job, Event: event.NoSuccess})
			}
			// Once raised, the episode stays open until a success moves
			// the deadline: look again a little later.
			p.push(planItem{at: now.Add(quiet), job: it.job, event: event.NoSuccess})
		}
	}
	return checks
}

// reminders are the reminder checks due: an open episode's channel whose
// rule repeats, last paged at least repeat ago.
func (p *plans) reminders(st State, rules []*pb.NotifyRule, now time.Time, room int) []*pb.AlertCheck {
	var checks []*pb.AlertCheck
	for _, ep := range st.OpenEpisodes() {
		if len(checks) >= room {
			break
		}
		sj, err := st.StoredJob(ep.GetJob())
		if err != nil {
			continue
		}
		for _, pc := range ep.GetChannels() {
			repeat := repeatOf(sj.Job.GetSpec(), rules, pc.GetChannel(), ep.GetEvent())
			if repeat == 0 || now.Before(time.Unix(0, pc.GetLastSentAtUnixNano()).Add(repeat)) {
				continue
			}
			key := "remind/" + ep.GetId() + "/" + pc.GetChannel() + "/" + time.Unix(0, pc.GetLastSentAtUnixNano()).String()
			if !p.fresh(key, now) {
				checks = append(checks, &pb.AlertCheck{Job: ep.GetJob(), Episode: ep.GetId(), Channel: pc.GetChannel()})
			}
		}
	}
	return checks
}

// repeatOf is the shortest repeat of the job's rules that page ch about
// ev; 0 for none.
func repeatOf(spec *pb.JobSpec, rules []*pb.NotifyRule, ch, ev string) time.Duration {
	var least time.Duration
	consider := func(channel string, on []string, repeat time.Duration) {
		if channel == ch && repeat > 0 && event.Of(on).Has(ev) && (least == 0 || repeat < least) {
			least = repeat
		}
	}
	for _, n := range spec.GetNotify() {
		consider(n.GetChannel(), n.GetOn(), n.GetRepeat().AsDuration())
	}
	for _, r := range rules {
		if fsm.SpecHasLabels(spec, r.GetSelector()) {
			consider(r.GetChannel(), r.GetOn(), r.GetRepeat().AsDuration())
		}
	}
	return least
}

// itemHeap orders plan items by time.
type itemHeap []planItem

func (h itemHeap) Len() int           { return len(h) }
func (h itemHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h itemHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)        { *h = append(*h, x.(planItem)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
