package scheduler

import "time"

// tick plans every job that changed or is due, and the pending triggers,
// and commits and dispatches the result, in stages that each have a file
// of their own: due, plan, propose, accept, adopt (DESIGN.md, "The
// tick"). The middle three overlap: plan proposes each entry as soon as it
// is cut, and between two jobs accepts the entries that have committed
// meanwhile, so the first deliveries of a large tick do not wait for the
// whole tick to be planned. worked reports whether there was anything to
// do; ok is false if some entry failed to commit.
func (l *leader) tick(now time.Time) (worked, ok bool) {
	p := &pipeline{l: l, now: now}
	todo := p.due()
	p.plan(todo)
	p.acceptRest()
	p.adopt()
	l.stopCancelled() // runs cancelled before the tick dispatched them
	return len(p.parts) > 0, !p.failed
}

// pipeline is one tick's entries on their way through Raft. Only the loop
// goroutine uses it; it proposes the entries, and goroutines of their own
// wait for their commits and hand the results back through
// pendingBatch.done.
type pipeline struct {
	l   *leader
	now time.Time
	// parts are what the tick planned and proposed, for adopt.
	parts []*planned
	// pending are the proposed entries in proposal order; the first
	// unaccepted one is pending[accepted].
	pending  []*pendingBatch
	accepted int
	failed   bool
	// fpToken is the token the dispatch-before-commit failpoint expects
	// the next fire to get.
	fpToken uint64
}
