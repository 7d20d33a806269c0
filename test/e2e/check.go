package e2e

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Rules a violation can name: the guarantees of DESIGN.md §1, and the
// dispatch contract of §7.
const (
	RuleG1       = "G1" // one commit per slot
	RuleG2       = "G2" // commit before dispatch; nodes agree on the ledger
	RuleG3       = "G3" // fencing tokens unique, rising, never reused; stale attempts refused
	RuleG4       = "G4" // no lost slot; one effect per run; re-dispatch before newer slots
	RuleG6       = "G6" // linearizable registry
	RuleContract = "contract"
)

// Violation is one observation that breaks a rule.
type Violation struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

// Stats say how much a run exercised.
type Stats struct {
	Attempts       int `json:"attempts"`
	Applied        int `json:"applied"`
	Duplicates     int `json:"duplicates"`
	StaleRefused   int `json:"stale_refused"`
	StaleAtArrival int `json:"stale_at_arrival"`
	SlotsChecked   int `json:"slots_checked"`
	RunsChecked    int `json:"runs_checked"`
	Redispatched   int `json:"redispatched"`
	// OverlapSkipped slots were skipped because a run of the job was
	// open when they came due (the overlap policy, not a loss).
	OverlapSkipped int    `json:"overlap_skipped"`
	LeaderChanges  int    `json:"leader_changes"`
	MaxToken       uint64 `json:"max_token"`
	// Unverifiable attempts predate both the replayed log (compacted
	// under a snapshot) and the runs the ledger still keeps.
	Unverifiable int `json:"unverifiable,omitempty"`
	// ChainedRuns are the chained runs dispatched, ParentRuns the
	// succeeded parent runs whose children were checked (chains).
	ChainedRuns    int    `json:"chained_runs,omitempty"`
	ParentRuns     int    `json:"parent_runs,omitempty"`
	RegistryOps    int    `json:"registry_ops"`
	RegistryUnsure int    `json:"registry_unknown"`
	Linearizable   string `json:"linearizable,omitempty"` // porcupine's verdict
}

// Report is the checker's verdict.
type Report struct {
	Violations   []Violation `json:"violations"`
	Inconclusive []string    `json:"inconclusive"`
	Stats        Stats       `json:"stats"`

	registry *registryResult
}

// OK reports whether the run proved something and broke nothing.
func (r Report) OK() bool { return len(r.Violations) == 0 && len(r.Inconclusive) == 0 }

// Broke reports whether some violation names rule.
func (r Report) Broke(rule string) bool {
	for _, v := range r.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// maxShown caps the violations listed per rule; the rest are counted.
const maxShown = 15

func (r Report) String() string {
	var b strings.Builder
	s := r.Stats
	fmt.Fprintf(&b, "attempts %d (applied %d, duplicate %d, stale refused %d, stale at arrival %d); "+
		"slots checked %d (overlap-skipped %d); runs checked %d; re-dispatched %d; leader changes %d; max token %d; "+
		"registry ops %d (unknown outcome %d, linearizable: %s)\n",
		s.Attempts, s.Applied, s.Duplicates, s.StaleRefused, s.StaleAtArrival, s.SlotsChecked, s.OverlapSkipped,
		s.RunsChecked, s.Redispatched, s.LeaderChanges, s.MaxToken, s.RegistryOps, s.RegistryUnsure,
		orDash(s.Linearizable))
	if s.ChainedRuns > 0 || s.ParentRuns > 0 {
		fmt.Fprintf(&b, "chains: %d succeeded parent runs checked, %d chained runs dispatched\n", s.ParentRuns, s.ChainedRuns)
	}
	for _, msg := range r.Inconclusive {
		fmt.Fprintf(&b, "INCONCLUSIVE: %s\n", msg)
	}
	shown := map[string]int{}
	for _, v := range r.Violations {
		shown[v.Rule]++
		if shown[v.Rule] <= maxShown {
			fmt.Fprintf(&b, "VIOLATION %s: %s\n", v.Rule, v.Detail)
		}
	}
	for rule, n := range shown {
		if n > maxShown {
			fmt.Fprintf(&b, "VIOLATION %s: ... and %d more\n", rule, n-maxShown)
		}
	}
	if r.OK() {
		b.WriteString("OK\n")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// VisualizeRegistry writes porcupine's HTML view of the registry history
// (useful when G6 broke).
func (r Report) VisualizeRegistry(path string) error {
	if r.registry == nil {
		return fmt.Errorf("no registry history was checked")
	}
	return porcupine.VisualizePath(registryModel, r.registry.info, path)
}

// CheckOptions tune the checker.
type CheckOptions struct {
	// RegistryTimeout bounds porcupine; a check that does not finish is
	// inconclusive. Zero means one minute.
	RegistryTimeout time.Duration
}

// Check verifies the guarantees on a scenario's history and the run
// ledgers dumped from its nodes at the end. It is a pure function of its
// inputs.
func Check(h *History, ledgers []NodeLedger, opts CheckOptions) Report {
	c := newChecker(h, ledgers)
	c.conclusive()
	c.checkSink()
	if c.ref != nil {
		c.checkAgreement()
		c.checkLedgerSlots()
		c.checkDispatched()
		c.checkTokens()
		c.checkCoverage()
		c.checkOrder()
		c.checkChains()
	}
	c.checkKillAll()
	c.checkRegistry(opts)
	c.rep.Stats.LeaderChanges = leaderChanges(h.Status)
	c.expectations()
	return c.rep
}

// checker carries the indexes every rule shares.
type checker struct {
	h       *History
	ledgers []NodeLedger
	// ref is the ledger the others are compared with and the rules read:
	// a replayed data dir if there is one (it also knows log order).
	ref  *NodeLedger
	jobs map[string]JobInfo
	// committed maps each token to the attempts the ledger says carried
	// it (more than one is itself a violation).
	committed map[uint64][]commit
	// effects counts applied attempts per idempotency key.
	effects map[effectKey]int
	// ownKey holds the word of the key of the reference ledger's runs whose
	// idempotency key is their own (manual, chained), not their slot's.
	ownKey map[string]string
	rep    Report
}

type slotKey struct {
	job  string
	slot int64
}

// effectKey is an idempotency key: a slot, or a run named by its id.
type effectKey struct {
	slotKey
	run string
}

// keyOf is the idempotency key of a run of job at slot.
func (c *checker) keyOf(job string, slot int64, runID string) effectKey {
	if c.ownKey[runID] != "" {
		return effectKey{slotKey{job, slot}, runID}
	}
	return effectKey{slotKey: slotKey{job, slot}}
}

// commit is one committed attempt, from a ledger run or a log fire.
type commit struct {
	runID  string
	job    string
	slot   int64
	number uint32
	node   string
	term   uint64
	kind   string
	state  string // from a run; empty from a log fire
	// dispatched is the leader's clock when it proposed the attempt (from
	// a run; 0 from a log fire).
	dispatched int64
}

func newChecker(h *History, ledgers []NodeLedger) *checker {
	c := &checker{h: h, ledgers: ledgers, jobs: map[string]JobInfo{}, committed: map[uint64][]commit{},
		effects: map[effectKey]int{}, ownKey: map[string]string{}}
	for _, j := range h.Jobs {
		c.jobs[j.Name] = j
	}
	for i := range ledgers {
		if c.ref == nil || (ledgers[i].Source == "data-dir" && c.ref.Source != "data-dir") {
			c.ref = &ledgers[i]
		}
	}
	if c.ref != nil {
		c.indexCommitted()
		for _, r := range c.ref.Runs {
			switch r.Kind {
			case KindManual:
				c.ownKey[r.ID] = keyManual
			case KindChained:
				c.ownKey[r.ID] = keyChained
			}
		}
	}
	return c
}

func (c *checker) fail(rule, format string, args ...any) {
	c.rep.Violations = append(c.rep.Violations, Violation{Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) inconclusive(format string, args ...any) {
	c.rep.Inconclusive = append(c.rep.Inconclusive, fmt.Sprintf(format, args...))
}

// indexCommitted fills c.committed from the reference ledger's runs and
// log fires, merging the two views of the same attempt.
func (c *checker) indexCommitted() {
	add := func(token uint64, cm commit) {
		for i, have := range c.committed[token] {
			if have.runID == cm.runID && have.number == cm.number {
				if have.state == "" && cm.state != "" {
					c.committed[token][i] = cm
				}
				return
			}
		}
		c.committed[token] = append(c.committed[token], cm)
	}
	for _, f := range c.ref.Fires {
		add(f.Token, commit{runID: f.RunID, job: f.Job, slot: f.Slot, number: f.Number, node: f.Node, term: f.Term, kind: f.Kind})
	}
	for _, r := range c.ref.Runs {
		for _, a := range r.Attempts {
			add(a.Token, commit{runID: r.ID, job: r.Job, slot: r.Slot, number: a.Number, node: a.Node, term: a.Term,
				kind: a.Kind, state: a.State, dispatched: a.Dispatched})
		}
	}
}

// conclusive fails runs that cannot prove anything about firing.
func (c *checker) conclusive() {
	if len(c.h.Jobs) == 0 {
		return
	}
	if len(c.h.Attempts) == 0 {
		c.inconclusive("no attempts recorded: is the scheduler wired?")
	}
	if len(c.ledgers) == 0 {
		c.inconclusive("no run ledger was dumped from any node")
	}
}

func (c *checker) expectations() {
	e, s := c.h.Expect, c.rep.Stats
	if s.LeaderChanges < e.LeaderChanges {
		c.inconclusive("%d leader change(s) observed, the scenario needs at least %d", s.LeaderChanges, e.LeaderChanges)
	}
	if s.Redispatched < e.Redispatches {
		c.inconclusive("%d attempt(s) re-dispatched, the scenario needs at least %d", s.Redispatched, e.Redispatches)
	}
	if s.StaleAtArrival < e.StaleAttempts {
		c.inconclusive("%d stale attempt(s) reached the sink, the scenario needs at least %d", s.StaleAtArrival, e.StaleAttempts)
	}
	if s.Unverifiable > 0 {
		c.inconclusive("%d attempt(s) predate both the replayed log and the runs the ledger keeps: "+
			"G2 could not be checked for them (raise history_limit or shorten the run)", s.Unverifiable)
	}
	if e.Registry && s.RegistryOps == 0 {
		c.inconclusive("the registry churn recorded no operation")
	}
	if s.ChainedRuns < e.ChainedRuns {
		c.inconclusive("%d chained run(s) dispatched, the scenario needs at least %d", s.ChainedRuns, e.ChainedRuns)
	}
}

// leaderChanges counts the terms in which some node reported itself
// leader, minus the first.
func leaderChanges(points []StatusPoint) int {
	terms := map[uint64]bool{}
	for _, p := range points {
		if p.State == "leader" && p.Err == "" {
			terms[p.Term] = true
		}
	}
	return max(len(terms)-1, 0)
}

// checkSink walks the sink's decisions in order: fencing at the sink, one
// effect per run, one run id per slot, one attempt per token.
func (c *checker) checkSink() {
	atts := append([]Attempt(nil), c.h.Attempts...)
	sort.SliceStable(atts, func(i, j int) bool { return atts[i].Seq < atts[j].Seq })
	admitted := map[string]uint64{} // job -> highest token admitted
	runOfSlot := map[slotKey]string{}
	byToken := map[uint64]Attempt{}
	s := &c.rep.Stats
	for _, a := range atts {
		s.Attempts++
		s.MaxToken = max(s.MaxToken, a.Token)
		if a.Outcome == Bad {
			c.fail(RuleContract, "seq %d: request refused as malformed: %s", a.Seq, a.Detail)
			continue
		}
		if want := runKey(a.Job, a.Slot, a.RunID, c.ownKey[a.RunID]); a.Key != want {
			c.fail(RuleContract, "seq %d: Idempotency-Key %q, want %q", a.Seq, a.Key, want)
		}
		stale := a.Token < admitted[a.Job]
		if stale {
			s.StaleAtArrival++
		}
		switch a.Outcome {
		case Applied:
			s.Applied++
			c.effects[c.keyOf(a.Job, a.Slot, a.RunID)]++
			if stale {
				c.fail(RuleG3, "stale attempt took effect: %s token %d applied after token %d was admitted for %s",
					a.RunID, a.Token, admitted[a.Job], a.Job)
			}
		case Duplicate:
			s.Duplicates++
		case Stale:
			s.StaleRefused++
			if !stale {
				c.fail(RuleContract, "seq %d: sink refused token %d as stale but only %d was admitted", a.Seq, a.Token, admitted[a.Job])
			}
		}
		if a.Outcome == Applied || a.Outcome == Duplicate {
			admitted[a.Job] = max(admitted[a.Job], a.Token)
		}
		k := slotKey{a.Job, a.Slot}
		if id, ok := runOfSlot[k]; c.ownKey[a.RunID] != "" {
			// Not a slot of its job's schedule: its slot is only a second.
		} else if ok && id != a.RunID {
			c.fail(RuleG1, "slot %s of %s reached the sink under two run ids: %s and %s", slotTime(a.Slot), a.Job, id, a.RunID)
		} else if !ok {
			runOfSlot[k] = a.RunID
		}
		if prev, ok := byToken[a.Token]; ok && (prev.RunID != a.RunID || prev.Number != a.Number) {
			c.fail(RuleG3, "token %d carried by two attempts: %s #%d (seq %d) and %s #%d (seq %d)",
				a.Token, prev.RunID, prev.Number, prev.Seq, a.RunID, a.Number, a.Seq)
		} else if !ok {
			byToken[a.Token] = a
		}
		if j, ok := c.jobs[a.Job]; ok && j.AtMostOnce && a.Number > 1 {
			c.fail(RuleG4, "at_most_once job %s: attempt %d of %s was dispatched", a.Job, a.Number, a.RunID)
		}
	}
	for k, n := range c.effects {
		if n > 1 {
			what := "run"
			if k.run != "" {
				what += " " + k.run
			}
			c.fail(RuleG4, "%s of %s at %s took effect %d times", what, k.job, slotTime(k.slot), n)
		}
	}
}

func slotTime(slot int64) string { return time.Unix(slot, 0).UTC().Format("15:04:05") }

// clockTime is a Unix ns time as a report says it; 0 is "never".
func clockTime(ns int64) string {
	if ns == 0 {
		return "never"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000")
}
