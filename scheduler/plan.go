package scheduler

import (
	"errors"
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// How a tick is cut into FireBatch entries (DESIGN.md, "The tick").
const (
	// maxFiresPerEntry caps the fires and misses of one FireBatch entry; a
	// bigger tick is split into entries, each proposed as soon as it is
	// planned. A job's fires never straddle two entries.
	maxFiresPerEntry = 2000
	// firstEntryFires caps a tick's first entry instead: a small entry
	// commits sooner, so a wave's first deliveries start while the rest of
	// it is still being planned and committed, instead of every fire of a
	// 2,000-fire wave waiting for one large entry.
	firstEntryFires = 250
)

// plan plans the tick's work and proposes it as it goes: the
// re-dispatches of lost attempts first, in entries of their own (lost.go),
// then what was planned ahead, then each job, cut into entries
// (entryCut), those with a trigger last with their manual fires. Between
// two jobs it accepts the entries that have committed meanwhile.
func (p *pipeline) plan(todo todo) {
	l := p.l
	p.propose(l.planLost(p.now))
	cut := newEntryCut()
	for _, pl := range todo.ahead {
		if p.propose(pl) {
			cut.limit = maxFiresPerEntry // the tick's first entry is on its way
		}
	}
	if len(l.extra) > 0 {
		g := cut.pl.group("", nil)
		g.fires, l.extra = l.extra, nil
		cut.n += len(g.fires)
	}
	for _, name := range todo.names {
		if full := cut.add(p.planOne(name, cut.pl)); full != nil {
			p.propose(full)
		}
		p.acceptReady()
	}
	for _, name := range todo.last {
		p.planOne(name, cut.pl)
	}
	l.addTriggers(cut.pl, todo.reqs)
	p.propose(cut.pl)
}

// entryCut cuts planned work into parts, each proposed once full: the
// first holds firstEntryFires fires and misses or more, every later one
// maxFiresPerEntry or more. A part is full once the job just planned
// into it takes it to its limit, so a job's work is never split.
type entryCut struct {
	pl    *planned
	n     int // fires and misses in pl
	limit int
}

func newEntryCut() entryCut { return entryCut{pl: newPlanned(), limit: firstEntryFires} }

// add counts n more fires and misses in c.pl. If that fills it, add
// returns it and starts the next part.
func (c *entryCut) add(n int) (full *planned) {
	c.n += n
	if c.n < c.limit {
		return nil
	}
	full = c.pl
	c.pl, c.n, c.limit = newPlanned(), 0, maxFiresPerEntry
	return full
}

// planOne re-plans one job from the state and files its work in pl. It
// returns how many fires and misses it added.
func (p *pipeline) planOne(name string, pl *planned) int {
	l, now := p.l, p.now
	sj, err := l.s.state.StoredJob(name)
	if errors.Is(err, fsm.ErrNotFound) {
		// Deleted: no new slots. This node's attempts are cancelled and
		// recorded so; orphans of earlier terms are closed by the FSM on
		// re-dispatch. (Runs waiting for a retry were closed by the delete.)
		l.heap.remove(name)
		delete(l.cool, name)
		l.s.handoff.cancelJob(name, 0, errJobDeleted)
		orphans := l.orphansOf(func(job string) bool { return job == name })
		if len(orphans) > 0 {
			g := pl.group("", nil)
			g.fires = append(g.fires, orphans...)
		}
		return len(orphans)
	}
	if err != nil {
		l.s.log.Error("scheduler: reading job", "job", name, "error", err)
		l.heap.set(name, now.Add(maxSleep).UnixNano())
		return 0
	}
	return l.planStored(name, sj, now, pl)
}

// planStored is planOne for a job read from the state.
func (l *leader) planStored(name string, sj fsm.StoredJob, now time.Time, pl *planned) int {
	if until, ok := l.cool[name]; ok {
		if until.After(now) {
			l.heap.set(name, until.UnixNano())
			return 0
		}
		delete(l.cool, name)
	}
	sched, perr := jobSchedule(sj.Job)
	if perr != nil {
		l.s.log.Warn("scheduler: job schedule does not parse; no slots fire", "job", name, "error", perr)
	}
	in := planInput{
		job:    sj.Job,
		status: sj.Status,
		open:   l.openRuns(sj.Status),
		sched:  sched,
		now:    now,
		term:   l.term,
		self:   l.s.self,
		known:  l.isKnown,
		lost:   l.isResolving,
	}
	if sj.Status.GetDeferredSlotUnix() != 0 { // only then: planning every other job costs nothing more
		in.frozen = func() (int64, bool) { return l.s.state.FrozenUntil(name, now.Unix()) }
	}
	p := planJob(in)
	pl.file(name, sj, &p, now)
	if p.endPause != 0 {
		l.endPause(name, p.endPause)
	}
	l.rewake(name, &p, now)
	return len(p.fires) + len(p.misses)
}

// rewake puts the job back on the heap at its plan's wake-up.
func (l *leader) rewake(name string, p *plan, now time.Time) {
	switch {
	case p.wake.IsZero():
		l.heap.remove(name)
	case !p.busy() && !p.wake.After(now):
		// Due again with nothing to do would spin; cannot happen, but a
		// loop that spins starves every other job, so guard anyway.
		l.heap.set(name, now.Add(maxSleep).UnixNano())
	default:
		l.heap.set(name, p.wake.UnixNano())
	}
}

// openRuns reads the job's open runs, oldest first.
func (l *leader) openRuns(status *pb.JobStatus) []*pb.Run {
	ids := status.GetOpenRunIds()
	if len(ids) == 0 {
		return nil
	}
	runs := make([]*pb.Run, 0, len(ids))
	for _, id := range ids {
		if r, err := l.s.state.Run(id); err == nil {
			runs = append(runs, r)
		}
	}
	return runs
}

// planned is what (part of) a tick planned, grouped by job so that a job's
// fires stay together (and in order) when it is split into fire batches.
type planned struct {
	groups []*group
	byJob  map[string]*group
}

type group struct {
	name   string
	job    *pb.Job // nil for the orphans of deleted jobs
	fires  []*pb.Fire
	misses []*pb.Miss
	adopt  []*pb.Run
	expire []*pb.Completion
	// reqs parallels fires: the trigger waiting for a fire's result.
	reqs []*triggerReq
	// quiet: planned with nothing of the job open or buffered, and fires
	// only. If all its fires are accepted, the plan's wake-up stays right
	// and the job need not be planned again until then (fresh.go).
	quiet bool
	// fresh: quiet, and its fires were accepted as planned; the job is not
	// queued for planning again.
	fresh bool
}

func newPlanned() *planned { return &planned{byJob: make(map[string]*group)} }

// group returns the job's group, creating it at the end.
func (pl *planned) group(name string, job *pb.Job) *group {
	if g, ok := pl.byJob[name]; ok {
		if g.job == nil {
			g.job = job
		}
		return g
	}
	g := &group{name: name, job: job}
	pl.groups = append(pl.groups, g)
	pl.byJob[name] = g
	return g
}

// file adds a job's plan to its group, if there is anything to commit.
func (pl *planned) file(name string, sj fsm.StoredJob, p *plan, now time.Time) {
	if !p.busy() {
		return
	}
	status := sj.Status
	g := pl.group(name, sj.Job)
	g.quiet = len(status.GetOpenRunIds()) == 0 && status.GetBufferedSlotUnix() == 0 && status.GetDeferredSlotUnix() == 0 && len(g.fires) == 0 &&
		len(p.misses) == 0 && len(p.adopt) == 0 && p.wake.After(now)
	g.fires = append(g.fires, p.fires...)
	g.misses = append(g.misses, p.misses...)
	g.adopt = append(g.adopt, p.adopt...)
	g.expire = append(g.expire, p.expire...)
}
