package e2e

import (
	"fmt"
	"sort"
	"strings"
)

// RuleChains: a job that runs after another fires once per qualifying
// parent run — committed with the parent's outcome, so none is lost and
// none committed twice — under a token above its parent's, and its
// dispatches name their parents as the ledger does.
const RuleChains = "chains"

// checkChains checks each dependency of the workload on the reference
// ledger and at the sink. Every succeeded run of a parent must have
// exactly one record of the child naming it (a chained run, or a record of
// why it did not run); the child never fires for a parent run that did not
// succeed; a chained run's parent ref carries the parent's last token, and
// its attempts carry tokens above it; every dispatch of the child names
// its parents in X-Raftcron-Parent-Runs as the ledger records them; a
// chained run that succeeded took effect exactly once.
func (c *checker) checkChains() {
	if len(c.h.Chains) == 0 {
		return
	}
	runs := runsByID(c.ref.Runs)
	chained := 0
	for _, link := range c.h.Chains {
		children := map[string][]Run{} // parent run id -> the child's records naming it
		for _, r := range c.ref.Runs {
			if r.Job != link.Child {
				continue
			}
			if len(r.Parents) == 0 {
				c.fail(RuleChains, "run %s of %s (%s) names no parent run", r.ID, link.Child, r.Kind)
			}
			for _, p := range r.Parents {
				if p.Job == link.Parent {
					children[p.RunID] = append(children[p.RunID], r)
				}
			}
			if r.Kind == KindChained && len(r.Attempts) > 0 {
				chained++
			}
		}
		for _, p := range c.ref.Runs {
			if p.Job == link.Parent {
				c.checkChildren(link, p, children[p.ID])
			}
		}
		for id, recs := range children {
			p, ok := runs[id]
			switch {
			case !ok:
				c.rep.Stats.Unverifiable++ // the parent left the ledger
			case p.State != StateSucceeded:
				c.fail(RuleChains, "%s fired %s for %s, which did not succeed (%s)", link.Child, recs[0].ID, id, p.State)
			}
		}
	}
	c.checkLineageAtSink(runs)
	c.rep.Stats.ChainedRuns = chained
}

// checkChildren: one record of the child per succeeded run p of the
// parent, with p's token, and a child token above it.
func (c *checker) checkChildren(link ChainLink, p Run, recs []Run) {
	if p.State != StateSucceeded {
		return
	}
	c.rep.Stats.ParentRuns++
	switch len(recs) {
	case 0:
		c.fail(RuleChains, "%s (token %d) succeeded but %s has no run for it: the child was lost",
			p.ID, lastToken(p), link.Child)
		return
	case 1:
	default:
		ids := make([]string, len(recs))
		for i, r := range recs {
			ids[i] = r.ID
		}
		c.fail(RuleChains, "%s (token %d) has %d runs of %s: %s; want one, committed with its outcome",
			p.ID, lastToken(p), len(recs), link.Child, strings.Join(ids, ", "))
	}
	for _, r := range recs {
		for _, ref := range r.Parents {
			if ref.RunID == p.ID && ref.Token != lastToken(p) {
				c.fail(RuleChains, "%s names parent %s with token %d, but its last attempt had %d", r.ID, p.ID, ref.Token, lastToken(p))
			}
		}
		for _, a := range r.Attempts {
			if a.Token <= lastToken(p) {
				c.fail(RuleChains, "%s #%d has token %d, not above its parent %s's %d", r.ID, a.Number, a.Token, p.ID, lastToken(p))
			}
		}
		if r.State == StateSucceeded {
			if n := c.effects[c.keyOf(r.Job, r.Slot, r.ID)]; n != 1 {
				c.fail(RuleChains, "chained run %s succeeded and took effect %d times at the sink, want once", r.ID, n)
			}
		}
	}
}

// checkLineageAtSink: every dispatch of a child carries the parents the
// ledger gives its run.
func (c *checker) checkLineageAtSink(runs map[string]Run) {
	children := map[string]bool{}
	for _, link := range c.h.Chains {
		children[link.Child] = true
	}
	for _, a := range c.h.Attempts {
		if !children[a.Job] || a.Outcome == Bad {
			continue
		}
		r, ok := runs[a.RunID]
		if !ok {
			continue // left the ledger: checkDispatched says so
		}
		if want := parentHeader(r.Parents); a.Parents != want {
			c.fail(RuleChains, "seq %d: %s #%d (token %d) arrived with parents %q, the ledger says %q",
				a.Seq, a.RunID, a.Number, a.Token, a.Parents, want)
		}
	}
}

// parentHeader is X-Raftcron-Parent-Runs for parents.
func parentHeader(parents []ParentRef) string {
	parts := make([]string, len(parents))
	for i, p := range parents {
		parts[i] = fmt.Sprintf("%s@%d", p.RunID, p.Token)
	}
	return strings.Join(parts, ",")
}

// lastToken is the token of a run's last attempt.
func lastToken(r Run) uint64 {
	if len(r.Attempts) == 0 {
		return 0
	}
	atts := append([]RunAttempt(nil), r.Attempts...)
	sort.Slice(atts, func(i, j int) bool { return atts[i].Number < atts[j].Number })
	return atts[len(atts)-1].Token
}
