package scheduler

import "slices"

// todo is what one tick plans.
type todo struct {
	// ahead is what was planned ahead for this tick (ahead.go).
	ahead []*planned
	// names are the jobs to plan, in name order, and last those with a
	// pending trigger: a triggered job's manual fire follows its planned
	// fires in the same group, so such jobs are planned last, into the
	// tick's last entry.
	names, last []string
	reqs        []*triggerReq
}

// due collects the tick's work: the jobs the FSM observer marked dirty,
// the jobs due on the heap, the pending triggers, and what was planned
// ahead for now.
func (p *pipeline) due() todo {
	l, now := p.l, p.now
	names := l.s.takeDirty(nil)
	// An outcome is forgotten before its job is marked dirty: draining
	// after taking the marks lets planning see every outcome behind them.
	l.drainForgotten()
	names = l.heap.popDue(now.UnixNano(), names)
	reqs := l.takeTriggers()
	triggered := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		triggered[r.name] = true
	}
	ahead, names := l.takeAhead(now, names, triggered)
	slices.Sort(names)
	names = slices.Compact(names)
	var last []string
	if len(triggered) > 0 {
		rest := names[:0]
		for _, name := range names {
			if triggered[name] {
				last = append(last, name)
			} else {
				rest = append(rest, name)
			}
		}
		names = rest
	}
	return todo{ahead: ahead, names: names, last: last, reqs: reqs}
}
