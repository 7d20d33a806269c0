package scheduler

import (
	"slices"
	"time"

	"github.com/raftcron/raftcron/internal/failpoint"
)

// tick plans every job that changed or is due, and the pending triggers,
// and commits and dispatches the result. Planning and committing overlap:
// each entry (firstEntryFires fires, then maxFiresPerEntry) is proposed as
// soon as it is planned,
// and the accepted fires of a committed entry are dispatched while later
// jobs are still being planned, so the first deliveries of a large tick do
// not wait for the whole tick to be planned. worked reports whether there
// was anything to do; ok is false if some entry failed to commit.
func (l *leader) tick(now time.Time) (worked, ok bool) {
	names := l.s.takeDirty(nil)
	// An outcome is forgotten before its job is marked dirty: draining
	// after taking the marks lets freshPlan see every outcome behind them.
	l.drainForgotten()
	names = l.heap.popDue(now.UnixNano(), names)
	reqs := l.takeTriggers()
	// A triggered job's manual fire follows its planned fires in the same
	// group, so such jobs are planned last, into the tick's last entry.
	triggered := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		triggered[r.name] = true
	}
	early, names := l.takeAhead(now, names, triggered)
	slices.Sort(names)
	names = slices.Compact(names)

	p := &pipeline{l: l, now: now}
	p.propose(l.planLost(now)) // in entries of their own: see lost.go
	limit := firstEntryFires
	for _, pl := range early {
		if !pl.empty() {
			p.propose(pl)
			limit = maxFiresPerEntry // the tick's first entry is on its way
		}
	}
	pl, n := newPlanned(), 0
	if len(l.extra) > 0 {
		g := pl.group("", nil)
		g.fires, l.extra = l.extra, nil
		n += len(g.fires)
	}
	var last []string
	for _, name := range names {
		if triggered[name] {
			last = append(last, name)
			continue
		}
		n += l.planOne(name, now, pl)
		if n >= limit {
			p.propose(pl)
			pl, n, limit = newPlanned(), 0, maxFiresPerEntry
		}
		p.acceptReady()
	}
	for _, name := range last {
		l.planOne(name, now, pl)
	}
	l.addTriggers(pl, reqs)
	p.propose(pl)
	worked, ok = p.finish()
	l.stopCancelled()
	return worked, ok
}

// pipeline is one tick's entries on their way through Raft. Only the loop
// goroutine uses it; it proposes the entries, and goroutines of their own
// wait for their commits and hand the results back through pending.done.
type pipeline struct {
	l     *leader
	now   time.Time
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

type pendingBatch struct {
	c    *fireBatch
	done chan batchResult // cap 1
}

// propose starts the proposal of pl's fire batches.
func (p *pipeline) propose(pl *planned) {
	if pl.empty() {
		return
	}
	p.parts = append(p.parts, pl)
	p.l.firing.Store(true)
	batches := pl.batches(maxFiresPerEntry)
	if failpoint.On(failpoint.DispatchBeforeCommit) {
		p.fpToken = p.l.dispatchBeforeCommit(batches, p.fpToken)
	}
	for _, c := range batches {
		if c.size() == 0 {
			continue
		}
		pc := &pendingBatch{c: c, done: make(chan batchResult, 1)}
		p.pending = append(p.pending, pc)
		// Proposed here, in order, so that the log holds the entries as
		// they were planned and each is accepted as soon as it commits.
		wait := p.l.propose(p.now, c)
		go func() { pc.done <- wait() }()
	}
}

// acceptReady dispatches the entries that have committed, in proposal
// order, without waiting for the others.
func (p *pipeline) acceptReady() {
	for p.accepted < len(p.pending) {
		pc := p.pending[p.accepted]
		select {
		case r := <-pc.done:
			p.settle(pc, r)
		default:
			return
		}
	}
}

// finish waits for every entry, dispatches what was accepted, adopts the
// attempts planning found, and queues the tick's jobs for re-planning.
func (p *pipeline) finish() (worked, ok bool) {
	for p.accepted < len(p.pending) {
		pc := p.pending[p.accepted]
		p.settle(pc, <-pc.done)
	}
	p.l.firing.Store(false)
	for _, pl := range p.parts {
		for _, g := range pl.groups {
			for _, r := range g.adopt {
				p.l.adopt(g.job, r)
			}
		}
		p.l.s.markDirty(pl.names()...)
	}
	return len(p.parts) > 0, !p.failed
}

func (p *pipeline) settle(pc *pendingBatch, r batchResult) {
	p.accepted++
	l, c := p.l, pc.c
	if r.err != nil && c.onlyLost() {
		l.lostNotCommitted(p.now, c, r.err)
		return
	}
	if r.err != nil {
		p.failed = true
		if l.ctx.Err() == nil {
			l.s.log.Warn("scheduler: fire batch not committed; nothing dispatched",
				"error", r.err, "fires", len(c.fires), "misses", len(c.misses))
		}
		c.failTriggers(r.err)
		return
	}
	l.accept(p.now, c, r.res)
}
