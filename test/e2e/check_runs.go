package e2e

import (
	"fmt"
	"reflect"
	"sort"
	"time"
)

// checkAgreement: every node's ledger equals the reference where both
// reflect the same log prefix (G2: the nodes agree on what was committed).
func (c *checker) checkAgreement() {
	refRuns := runsByID(c.ref.Runs)
	for i := range c.ledgers {
		l := &c.ledgers[i]
		if l == c.ref {
			continue
		}
		sameIndex := l.Index != 0 && l.Index == c.ref.Index
		if sameIndex && l.StateHash != "" && c.ref.StateHash != "" && l.StateHash != c.ref.StateHash {
			c.fail(RuleG2, "%s (%s) and %s (%s) hold different state at log index %d",
				l.Node, l.Source, c.ref.Node, c.ref.Source, l.Index)
		}
		runs := runsByID(l.Runs)
		for id, r := range runs {
			want, ok := refRuns[id]
			switch {
			case !ok && sameIndex:
				c.fail(RuleG2, "run %s is in %s's ledger but not in %s's", id, l.Node, c.ref.Node)
			case ok && !reflect.DeepEqual(r, want):
				c.fail(RuleG2, "run %s differs between %s (%s) and %s (%s)", id, l.Node, describeRun(r), c.ref.Node, describeRun(want))
			}
		}
		if sameIndex {
			for id := range refRuns {
				if _, ok := runs[id]; !ok {
					c.fail(RuleG2, "run %s is in %s's ledger but not in %s's", id, c.ref.Node, l.Node)
				}
			}
		}
	}
}

func runsByID(runs []Run) map[string]Run {
	m := make(map[string]Run, len(runs))
	for _, r := range runs {
		m[r.ID] = r
	}
	return m
}

func describeRun(r Run) string {
	s := fmt.Sprintf("%s slot %s %s", r.Kind, slotTime(r.Slot), r.State)
	for _, a := range r.Attempts {
		s += fmt.Sprintf(" [#%d token %d %s by %s/%d]", a.Number, a.Token, a.State, a.Node, a.Term)
	}
	return s
}

// maxRange bounds the missed ranges expanded slot by slot (a day).
const maxRange = 86400

// slotsOf lists the slots a ledger run stands for: one, or for a MISSED
// range of a stable job every slot of the range.
func (c *checker) slotsOf(r Run) []int64 {
	j, stable := c.jobs[r.Job]
	if r.State != StateMissed || r.LastSlot <= r.Slot || !stable || j.Period <= 0 || r.LastSlot-r.Slot > maxRange {
		return []int64{r.Slot}
	}
	var slots []int64
	for s := r.Slot; s <= r.LastSlot; s++ {
		if s%j.Period == 0 || s == r.Slot {
			slots = append(slots, s)
		}
	}
	return slots
}

// checkLedgerSlots: at most one run per (job, generation, slot) (G1).
// Manual and chained runs have an identity of their own and are left out.
func (c *checker) checkLedgerSlots() {
	type key struct {
		job  string
		gen  uint64
		slot int64
	}
	seen := map[key]string{}
	runs := append([]Run(nil), c.ref.Runs...)
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	for _, r := range runs {
		if r.Kind == KindManual || r.Kind == KindChained {
			continue
		}
		for _, s := range c.slotsOf(r) {
			k := key{r.Job, r.Generation, s}
			if other, ok := seen[k]; ok {
				c.fail(RuleG1, "slot %s of %s (generation %d) committed twice: runs %s and %s",
					slotTime(s), r.Job, r.Generation, other, r.ID)
				continue
			}
			seen[k] = r.ID
		}
	}
}

// clockSlack is how far the sink's clock and a node's may disagree: they
// are one machine's clock, so little.
const clockSlack = 100 * time.Millisecond

// checkDispatched: everything the sink received was a committed attempt,
// sent by the node that committed it and received after it was proposed
// (G2), and every attempt the ledger says succeeded did reach the sink.
func (c *checker) checkDispatched() {
	received := map[uint64]bool{}
	oldest := c.oldestKnown()
	for _, a := range c.h.Attempts {
		received[a.Token] = true
		if a.Outcome == Bad {
			continue
		}
		cms := c.committed[a.Token]
		if len(cms) == 0 && c.ref.FirstIndex > 1 && a.Token < oldest[a.Job] {
			c.rep.Stats.Unverifiable++
			continue
		}
		if len(cms) == 0 {
			c.fail(RuleG2, "seq %d: %s #%d (token %d, slot %s) was dispatched%s but never committed",
				a.Seq, a.RunID, a.Number, a.Token, slotTime(a.Slot), by(a.Sender))
			continue
		}
		cm := cms[0]
		if cm.runID != a.RunID || cm.job != a.Job || cm.number != a.Number || cm.slot != a.Slot {
			c.fail(RuleG2, "seq %d: dispatched %s #%d slot %s with token %d, but the ledger gave that token to %s #%d slot %s",
				a.Seq, a.RunID, a.Number, slotTime(a.Slot), a.Token, cm.runID, cm.number, slotTime(cm.slot))
			continue
		}
		if !c.h.ClockSkew && cm.dispatched != 0 && a.Received.UnixNano()+int64(clockSlack) < cm.dispatched {
			c.fail(RuleG2, "seq %d: %s #%d (token %d) reached the sink %s before %s proposed it",
				a.Seq, a.RunID, a.Number, a.Token, time.Duration(cm.dispatched-a.Received.UnixNano()).Round(time.Millisecond), cm.node)
		}
		if a.Sender != "" && cm.node != "" && a.Sender != cm.node {
			c.fail(RuleG2, "seq %d: %s #%d (token %d) was committed by %s but dispatched by %s",
				a.Seq, a.RunID, a.Number, a.Token, cm.node, a.Sender)
		}
	}
	for token, cms := range c.committed {
		for _, cm := range cms {
			if cm.state == "SUCCEEDED" && !received[token] {
				c.fail(RuleG2, "%s #%d (token %d) is recorded SUCCEEDED but the sink never received it", cm.runID, cm.number, token)
			}
		}
	}
}

// oldestKnown is, per job, the smallest token the reference ledger still
// knows of.
func (c *checker) oldestKnown() map[string]uint64 {
	m := map[string]uint64{}
	for token, cms := range c.committed {
		for _, cm := range cms {
			if old, ok := m[cm.job]; !ok || token < old {
				m[cm.job] = token
			}
		}
	}
	return m
}

func by(sender string) string {
	if sender == "" {
		return ""
	}
	return " by " + sender
}

// checkTokens: one attempt per token, tokens rising with the attempt
// number and in log order, the counter at least every token (G3).
func (c *checker) checkTokens() {
	for token, cms := range c.committed {
		c.rep.Stats.MaxToken = max(c.rep.Stats.MaxToken, token)
		if len(cms) > 1 {
			c.fail(RuleG3, "token %d was committed for %d attempts: %s #%d and %s #%d",
				token, len(cms), cms[0].runID, cms[0].number, cms[1].runID, cms[1].number)
		}
	}
	for _, r := range c.ref.Runs {
		for i := 1; i < len(r.Attempts); i++ {
			if r.Attempts[i].Token <= r.Attempts[i-1].Token {
				c.fail(RuleG3, "run %s: attempt #%d has token %d, not above #%d's %d",
					r.ID, r.Attempts[i].Number, r.Attempts[i].Token, r.Attempts[i-1].Number, r.Attempts[i-1].Token)
			}
		}
	}
	for i := 1; i < len(c.ref.Fires); i++ {
		prev, f := c.ref.Fires[i-1], c.ref.Fires[i]
		if f.Token <= prev.Token {
			c.fail(RuleG3, "log index %d gave token %d after index %d gave %d: not rising in log order",
				f.Index, f.Token, prev.Index, prev.Token)
		}
	}
	for _, l := range c.ledgers {
		if l.Token != 0 && l.Token < c.rep.Stats.MaxToken && l.Index == c.ref.Index {
			c.fail(RuleG3, "%s's fencing counter is %d, below token %d already issued", l.Node, l.Token, c.rep.Stats.MaxToken)
		}
	}
}

// checkCoverage: every slot of a stable job in its checked range has a
// committed, dispatched run; every run of the range is finished; every
// succeeded run of an at_least_once job took effect exactly once (G4).
func (c *checker) checkCoverage() {
	bySlot := map[slotKey][]Run{}
	for _, r := range c.ref.Runs {
		if r.Kind == KindManual || r.Kind == KindChained {
			continue
		}
		for _, s := range c.slotsOf(r) {
			k := slotKey{r.Job, s}
			bySlot[k] = append(bySlot[k], r)
		}
		c.rep.Stats.RunsChecked++
		for _, a := range r.Attempts {
			if a.Kind == KindRedispatch {
				c.rep.Stats.Redispatched++
			}
		}
	}
	for _, j := range c.h.Jobs {
		if j.Period <= 0 || j.CheckTo <= j.Created {
			continue
		}
		first := (j.Created/j.Period + 1) * j.Period
		for s := first; s <= j.CheckTo; s += j.Period {
			c.rep.Stats.SlotsChecked++
			c.checkSlot(j, s, bySlot[slotKey{j.Name, s}])
		}
	}
	for _, r := range c.ref.Runs {
		j, stable := c.jobs[r.Job]
		if !stable {
			continue
		}
		if j.AtMostOnce && len(r.Attempts) > 1 {
			c.fail(RuleG4, "at_most_once run %s has %d attempts: it was repeated", r.ID, len(r.Attempts))
		}
		if r.State == StateSucceeded && c.effects[c.keyOf(r.Job, r.Slot, r.ID)] == 0 {
			c.fail(RuleG4, "run %s succeeded but no attempt of it took effect at the sink", r.ID)
		}
	}
}

func (c *checker) checkSlot(j JobInfo, s int64, runs []Run) {
	if len(runs) == 0 {
		c.fail(RuleG4, "slot %s of %s is missing: no run committed", slotTime(s), j.Name)
		return
	}
	r := runs[0]
	switch {
	case r.State == StateMissed && r.Reason == ReasonOverlap:
		c.checkOverlapSkip(j, s)
	case r.State == StateMissed:
		c.fail(RuleG4, "slot %s of %s was recorded missed (%s) although every fault was shorter than the catch-up window",
			slotTime(s), j.Name, r.Reason)
	case r.State == StateSkipped:
		// A rule stopped the slot on purpose: recorded, never delivered.
		if n := c.effects[c.keyOf(j.Name, s, r.ID)]; n != 0 {
			c.fail(RuleG4, "slot %s of %s was recorded skipped (%s) but took effect %d times", slotTime(s), j.Name, r.Reason, n)
		}
	case r.open():
		c.fail(RuleG4, "run %s (slot %s) is still %s after the cluster healed", r.ID, slotTime(s), r.State)
	case !j.AtMostOnce && c.effects[c.keyOf(j.Name, s, r.ID)] != 1:
		c.fail(RuleG4, "run %s of at_least_once job %s took effect %d times, want exactly once (state %s)",
			r.ID, j.Name, c.effects[c.keyOf(j.Name, s, r.ID)], r.State)
	}
}

// lateStart is how late a run may start and still count as running on
// schedule: a run open past the next slot because it started later than
// this was caught up after an outage, not running long.
const lateStart = time.Second

// openAt finds the run of job that was open at the slot's nominal time
// (on the clock of the leader that committed it), if any, and says
// whether it had started on schedule.
func (c *checker) openAt(job string, slot int64) (open *Run, onSchedule bool) {
	at := slot * int64(time.Second)
	for i := range c.ref.Runs {
		r := &c.ref.Runs[i]
		if r.Job != job || r.State == StateMissed || r.CreatedAt == 0 || r.CreatedAt > at {
			continue
		}
		if end, ok := c.openUntil(*r); ok && end <= at {
			continue
		}
		if r.CreatedAt-r.Slot*int64(time.Second) < int64(lateStart) {
			return r, true
		}
		open = r
	}
	return open, false
}

// openUntil is when r finished on its leader's clock (ok false: still
// open). A run's creation time comes from the scheduler's clock and its
// finish from the executor's. They are one clock unless the clock-offset
// failpoint moved the scheduler's: then, when they disagree by more than
// a run can take, the finish is the creation plus the last attempt's
// duration. Without an offset clock the finish stands however long the
// run was open: an attempt of a remote worker may wait for a worker far
// longer than it runs, and the run is open all that time.
func (c *checker) openUntil(r Run) (int64, bool) {
	if r.FinishedAt == 0 {
		return 0, false
	}
	if !c.h.ClockSkew {
		return r.FinishedAt, true
	}
	if d := r.FinishedAt - r.CreatedAt; d >= 0 && d < int64(10*time.Second) || len(r.Attempts) == 0 {
		return r.FinishedAt, true
	}
	last := r.Attempts[len(r.Attempts)-1]
	return r.CreatedAt + max(last.Finished-last.Started, 0), true
}

// checkOverlapSkip: a slot skipped for overlap is the job's policy at work
// only if a run of the job that started on schedule was still open when
// the slot came due. A run that was open only because it was caught up
// late after an outage does not make the skip legitimate: the slot fell
// due while a quorum was up and is lost (G4).
func (c *checker) checkOverlapSkip(j JobInfo, s int64) {
	open, onSchedule := c.openAt(j.Name, s)
	switch {
	case onSchedule:
		c.rep.Stats.OverlapSkipped++
	case open != nil:
		c.fail(RuleG4, "slot %s of %s was recorded missed (overlap_skipped) while %s (slot %s) was open, but that run "+
			"started %s late, caught up after an outage: the slot was lost to the outage, not to the job running long",
			slotTime(s), j.Name, open.ID, slotTime(open.Slot),
			time.Duration(open.CreatedAt-open.Slot*int64(time.Second)).Round(time.Millisecond))
	default:
		c.fail(RuleG4, "slot %s of %s was recorded missed (overlap_skipped) but no run of the job was open when it came due%s",
			slotTime(s), j.Name, c.lastRunBefore(j.Name, s))
	}
}

// lastRunBefore describes the job's last run committed before the slot
// came due, for a report that says no run was open then.
func (c *checker) lastRunBefore(job string, slot int64) string {
	var last *Run
	for i := range c.ref.Runs {
		r := &c.ref.Runs[i]
		if r.Job == job && r.State != StateMissed && r.CreatedAt != 0 && r.CreatedAt <= slot*int64(time.Second) &&
			(last == nil || r.CreatedAt > last.CreatedAt) {
			last = r
		}
	}
	if last == nil {
		return ""
	}
	end, _ := c.openUntil(*last)
	return fmt.Sprintf(" (the last run before it, %s, was committed at %s and counted open until %s)",
		last.ID, clockTime(last.CreatedAt), clockTime(end))
}

// checkOrder: an attempt re-dispatched by a new leader goes before any
// newer slot of its job that leader fires (G4).
func (c *checker) checkOrder() {
	byJob := map[string][]Run{}
	for _, r := range c.ref.Runs {
		if len(r.Attempts) > 0 && r.Kind != KindManual {
			byJob[r.Job] = append(byJob[r.Job], r)
		}
	}
	for job, runs := range byJob {
		for _, r := range runs {
			for _, a := range r.Attempts {
				if a.Kind != KindRedispatch {
					continue
				}
				for _, newer := range runs {
					first := newer.Attempts[0]
					if newer.Slot > r.Slot && first.Term >= a.Term && first.Token < a.Token {
						c.fail(RuleG4, "%s: slot %s fired with token %d before the re-dispatch of %s (token %d, term %d)",
							job, slotTime(newer.Slot), first.Token, r.ID, a.Token, a.Term)
					}
				}
			}
		}
	}
}

// checkKillAll: after every node was killed and restarted, new attempts
// carry tokens above every token seen before (G3: the counter survived).
func (c *checker) checkKillAll() {
	for i, e := range c.h.Events {
		if e.Kind != EvKillAll {
			continue
		}
		restart := time.Time{}
		for _, later := range c.h.Events[i+1:] {
			if later.Kind == EvRestartAll {
				restart = later.At
				break
			}
		}
		if restart.IsZero() {
			continue
		}
		type attemptKey struct {
			run    string
			number uint32
		}
		before := map[attemptKey]bool{}
		var highest uint64
		for _, a := range c.h.Attempts {
			if a.Received.Before(e.At) {
				before[attemptKey{a.RunID, a.Number}] = true
				highest = max(highest, a.Token)
			}
		}
		for _, a := range c.h.Attempts {
			if a.Received.After(restart) && !before[attemptKey{a.RunID, a.Number}] && a.Token <= highest {
				c.fail(RuleG3, "after the kill-all at %s, %s #%d carried token %d, not above %d seen before it",
					e.At.UTC().Format("15:04:05.000"), a.RunID, a.Number, a.Token, highest)
			}
		}
	}
}
