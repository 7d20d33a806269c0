package scheduler

import (
	"context"
	"fmt"

	"github.com/raftcron/raftcron/internal/failpoint"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// propose starts the proposal of pl's fire batches, and reports whether
// pl held anything to commit or adopt.
func (p *pipeline) propose(pl *planned) bool {
	if pl.empty() {
		return false
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
		wait := p.proposeEntry(c)
		go func() { pc.done <- wait() }()
	}
	return true
}

// empty reports whether pl holds nothing to commit or adopt.
func (pl *planned) empty() bool {
	for _, g := range pl.groups {
		if len(g.fires) > 0 || len(g.misses) > 0 || len(g.adopt) > 0 || len(g.expire) > 0 {
			return false
		}
	}
	return true
}

// pendingBatch is a proposed entry; done receives its outcome.
type pendingBatch struct {
	c    *fireBatch
	done chan batchResult // cap 1
}

type batchResult struct {
	res *pb.CommandResult
	err error
}

// proposeEntry hands one FireBatch entry to Raft; wait returns its
// outcome.
func (p *pipeline) proposeEntry(c *fireBatch) (wait func() batchResult) {
	l := p.l
	cmd := &pb.Command{
		ProposedAtUnixNano: p.now.UnixNano(),
		Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
			LeaderId:    l.s.self,
			Term:        l.term,
			Fires:       c.fires,
			Misses:      c.misses,
			MaxOpenRuns: l.s.maxOpenRuns,
		}},
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
	outcome := l.s.prop.Propose(ctx, cmd)
	return func() batchResult {
		defer cancel()
		res, err := outcome()
		switch {
		case err != nil:
			return batchResult{err: err}
		case res.GetCode() != pb.ResultCode_RESULT_CODE_OK:
			return batchResult{err: fmt.Errorf("fire batch refused: %s: %s", res.GetCode(), res.GetMessage())}
		case len(res.GetFires()) != len(c.fires):
			return batchResult{err: fmt.Errorf("fire batch: %d results for %d fires", len(res.GetFires()), len(c.fires))}
		}
		return batchResult{res: res}
	}
}

// fireBatch is one FireBatch entry: fires and misses with, per fire, its
// job and waiting trigger.
type fireBatch struct {
	fires  []*pb.Fire
	misses []*pb.Miss
	// jobOf is the job each fire was planned from. Accepted fires run the
	// spec in their result instead; only the dispatch-before-commit
	// failpoint, which has no result, dispatches from it.
	jobOf []*pb.Job
	reqs  []*triggerReq
	// groups are the groups whose fires are in fires, in order.
	groups []*group
}

func (c *fireBatch) size() int { return len(c.fires) + len(c.misses) }

// batches splits the planned work into fire batches of about max fires and
// misses, never splitting a job's group (a group larger than max gets its
// own batch).
func (pl *planned) batches(max int) []*fireBatch {
	var out []*fireBatch
	cur := &fireBatch{}
	for _, g := range pl.groups {
		n := len(g.fires) + len(g.misses)
		if n == 0 {
			continue
		}
		if cur.size() > 0 && cur.size()+n > max {
			out = append(out, cur)
			cur = &fireBatch{}
		}
		if len(g.fires) > 0 {
			cur.groups = append(cur.groups, g)
		}
		cur.fires = append(cur.fires, g.fires...)
		cur.misses = append(cur.misses, g.misses...)
		for i := range g.fires {
			cur.jobOf = append(cur.jobOf, g.job)
			var req *triggerReq
			if i < len(g.reqs) {
				req = g.reqs[i]
			}
			cur.reqs = append(cur.reqs, req)
		}
	}
	if cur.size() > 0 {
		out = append(out, cur)
	}
	return out
}
