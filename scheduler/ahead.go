package scheduler

import (
	"slices"
	"time"
)

const (
	// planAheadLead is how long before a due time the loop plans the jobs
	// due then. Planning a 10,000-job wave takes tens of milliseconds of
	// CPU; done in the quiet before the slot, the wave's entries are all
	// proposed the moment it comes, instead of each waiting for the
	// planning of the jobs before it while the machine is busiest.
	planAheadLead = 250 * time.Millisecond
	// maxPlanAhead caps the jobs planned ahead for one due time, so the
	// planning fits in the lead; the rest are planned at the due time, as
	// without planning ahead.
	maxPlanAhead = 20_000
)

// ahead is the next wave, planned before it is due: the parts are what
// the tick at at proposes, as if it had planned them itself. A plan is a
// pure function of the job's state and the time (planJob), so a job whose
// state has not changed since plans the same at at; one that has is
// marked dirty, and the tick plans it afresh instead (see takeAhead).
type ahead struct {
	at    time.Time
	parts []*planned
}

// planAhead plans the jobs due next if that is within planAheadLead of
// now and nothing is planned ahead yet; it reports whether it did.
func (l *leader) planAhead(now time.Time) bool {
	due, ok := l.heap.peek()
	if l.ahead != nil || !ok || due <= now.UnixNano() || due-now.UnixNano() > int64(planAheadLead) {
		return false
	}
	at := time.Unix(0, due)
	names := l.heap.popDueUpTo(due, maxPlanAhead, nil)
	slices.Sort(names)
	a := &ahead{at: at}
	cut, total := newEntryCut(), 0
	for _, name := range names {
		sj, err := l.s.state.StoredJob(name)
		if err != nil {
			// Deleted or unreadable: the tick at the due time handles it.
			l.heap.set(name, due)
			continue
		}
		n := l.planStored(name, sj, at, cut.pl)
		total += n
		if full := cut.add(n); full != nil {
			a.parts = append(a.parts, full)
		}
	}
	a.parts = append(a.parts, cut.pl)
	l.ahead = a
	if total > 0 && l.s.aheadOfWave != nil {
		l.s.aheadOfWave(total)
	}
	return true
}

// takeAhead returns what was planned ahead for the tick at now, and
// names with the jobs to plan afresh added. A job the tick plans anyway
// (changed, due again, triggered: in names or triggered) loses its plan
// ahead. Before the due time the rest stays for that tick; after it,
// within the same second, the tick proposes it. A tick a second or more
// late plans everything afresh: slots may have come due since.
func (l *leader) takeAhead(now time.Time, names []string, triggered map[string]bool) ([]*planned, []string) {
	a := l.ahead
	if a == nil {
		return nil, names
	}
	dirty := make(map[string]bool, len(names))
	for _, name := range names {
		dirty[name] = true
	}
	for _, pl := range a.parts {
		pl.drop(func(name string) bool { return dirty[name] || triggered[name] })
	}
	switch {
	case now.Before(a.at):
		return nil, names
	case now.Unix() != a.at.Unix():
		l.ahead = nil
		for _, pl := range a.parts {
			for _, g := range pl.groups {
				names = append(names, g.name)
			}
		}
		return nil, names
	}
	l.ahead = nil
	return a.parts, names
}

// drop removes the groups of the jobs gone says so.
func (pl *planned) drop(gone func(name string) bool) {
	pl.groups = slices.DeleteFunc(pl.groups, func(g *group) bool {
		if !gone(g.name) {
			return false
		}
		delete(pl.byJob, g.name)
		return true
	})
}
