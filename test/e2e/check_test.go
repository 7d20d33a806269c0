package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// t0 is the creation time of the synthetic jobs: a multiple of 3, so that
// both jobs' slots line up with it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix()

// synth builds a clean history: job a (every 1 s, at_least_once) and job
// m (every 3 s, at_most_once), slots t0+1 .. t0+12 all fired by n1 in term
// 2 and applied once; a leader change from term 1 to 2; two nodes whose
// replayed ledgers agree; a linearizable registry history.
type synth struct {
	h       History
	ledgers []NodeLedger
	token   uint64
	index   uint64
}

func newSynth() *synth {
	s := &synth{}
	s.h = History{
		Scenario: "synthetic", Nodes: []string{"n1", "n2"}, Start: time.Unix(t0, 0),
		Jobs: []JobInfo{
			{Name: "a", Period: 1, Generation: 1, Created: t0, CheckTo: t0 + 12},
			{Name: "m", Period: 3, Generation: 1, Created: t0, CheckTo: t0 + 12, AtMostOnce: true},
		},
		Status: []StatusPoint{
			{At: time.Unix(t0, 0), Node: "n2", State: "leader", Term: 1},
			{At: time.Unix(t0+1, 0), Node: "n1", State: "leader", Term: 2},
		},
		Expect: Expect{LeaderChanges: 1, Registry: true},
	}
	var runs []Run
	var fires []LogFire
	for slot := t0 + 1; slot <= t0+12; slot++ {
		for _, j := range s.h.Jobs {
			if slot%j.Period != 0 {
				continue
			}
			s.token++
			s.index++
			id := fmt.Sprintf("%s-%d", j.Name, s.token)
			runs = append(runs, Run{ID: id, Job: j.Name, Generation: 1, Slot: slot, Kind: "SCHEDULED", State: "SUCCEEDED",
				Attempts: []RunAttempt{{Number: 1, Token: s.token, Kind: "SCHEDULED", Node: "n1", Term: 2, State: "SUCCEEDED",
					Dispatched: time.Unix(slot, 0).Add(time.Millisecond).UnixNano()}}})
			fires = append(fires, LogFire{Index: s.index, Term: 2, Token: s.token, RunID: id, Job: j.Name, Slot: slot, Number: 1, Kind: "SCHEDULED", Node: "n1"})
			s.receive(Attempt{Job: j.Name, RunID: id, Slot: slot, Token: s.token, Number: 1, Sender: "n1", Outcome: Applied})
		}
	}
	for _, n := range s.h.Nodes {
		s.ledgers = append(s.ledgers, NodeLedger{Node: n, Source: "data-dir", Index: s.index, StateHash: "h", Token: s.token,
			Runs: cloneRuns(runs), Fires: append([]LogFire(nil), fires...)})
	}
	s.h.Registry = []RegistryOp{
		{Client: 0, Key: "k", Kind: OpCreate, Value: "v1", Call: 0, Return: 10, Result: ResOK, Version: 1},
		{Client: 1, Key: "k", Kind: OpGet, Call: 5, Return: 15, Result: ResOK, Version: 1, Got: "v1"},
		{Client: 0, Key: "k", Kind: OpUpdate, Value: "v2", Expected: 1, Call: 20, Return: 30, Result: ResOK, Version: 2},
		{Client: 1, Key: "k", Kind: OpGet, Call: 40, Return: 50, Result: ResOK, Version: 2, Got: "v2"},
	}
	return s
}

func cloneRuns(runs []Run) []Run {
	out := make([]Run, len(runs))
	for i, r := range runs {
		out[i] = r
		out[i].Attempts = append([]RunAttempt(nil), r.Attempts...)
	}
	return out
}

// receive appends a sink record with the next seq, a key matching its
// slot and a receive time one second after the slot.
func (s *synth) receive(a Attempt) {
	a.Seq = len(s.h.Attempts) + 1
	a.Key = a.Job + "/" + time.Unix(a.Slot, 0).UTC().Format(time.RFC3339)
	if a.Received.IsZero() {
		a.Received = time.Unix(a.Slot, 0).Add(10 * time.Millisecond)
	}
	s.h.Attempts = append(s.h.Attempts, a)
}

// runs applies fn to every node's copy of the run with the given id.
func (s *synth) run(id string, fn func(r *Run)) {
	for i := range s.ledgers {
		for j := range s.ledgers[i].Runs {
			if s.ledgers[i].Runs[j].ID == id {
				fn(&s.ledgers[i].Runs[j])
			}
		}
	}
}

// skipForOverlap records the job's run of slot as skipped for overlap:
// missed, with no attempt, and none at the sink.
func (s *synth) skipForOverlap(t *testing.T, job string, slot int64) {
	t.Helper()
	id := s.runID(t, job, slot)
	s.run(id, func(r *Run) { r.State, r.Reason, r.Attempts = StateMissed, ReasonOverlap, nil })
	for i := range s.h.Attempts {
		if s.h.Attempts[i].RunID == id {
			s.h.Attempts = append(s.h.Attempts[:i], s.h.Attempts[i+1:]...)
			return
		}
	}
}

// addRun adds r (and its log fires) to every node's ledger.
func (s *synth) addRun(r Run) {
	for i := range s.ledgers {
		s.ledgers[i].Runs = append(s.ledgers[i].Runs, cloneRuns([]Run{r})[0])
		for _, a := range r.Attempts {
			s.index++
			s.ledgers[i].Fires = append(s.ledgers[i].Fires, LogFire{Index: s.index, Term: a.Term, Token: a.Token,
				RunID: r.ID, Job: r.Job, Slot: r.Slot, Number: a.Number, Kind: a.Kind, Node: a.Node})
		}
	}
}

func (s *synth) check(t *testing.T) Report {
	t.Helper()
	return Check(&s.h, s.ledgers, CheckOptions{RegistryTimeout: 10 * time.Second})
}

// runID is the id synth gave the run of job at slot.
func (s *synth) runID(t *testing.T, job string, slot int64) string {
	t.Helper()
	for _, r := range s.ledgers[0].Runs {
		if r.Job == job && r.Slot == slot {
			return r.ID
		}
	}
	t.Fatalf("no run of %s at %d", job, slot)
	return ""
}

func wantOK(t *testing.T, rep Report) {
	t.Helper()
	if !rep.OK() {
		t.Fatalf("a clean history was rejected:\n%s", rep)
	}
}

func wantBroken(t *testing.T, rep Report, rule, fragment string) {
	t.Helper()
	for _, v := range rep.Violations {
		if v.Rule == rule && strings.Contains(v.Detail, fragment) {
			return
		}
	}
	t.Fatalf("want a %s violation mentioning %q, got:\n%s", rule, fragment, rep)
}

func TestCheckAcceptsACleanHistory(t *testing.T) {
	s := newSynth()
	rep := s.check(t)
	wantOK(t, rep)
	st := rep.Stats
	if st.SlotsChecked != 16 || st.Applied != 16 || st.LeaderChanges != 1 || st.RegistryOps != 4 || st.Linearizable != "Ok" {
		t.Fatalf("stats = %+v, want 16 slots (12 of a, 4 of m), 16 applied, 1 leader change, 4 registry ops, Ok", st)
	}
}

func TestCheckAcceptsFailoverWithRedispatchAndFencedStaleAttempt(t *testing.T) {
	s := newSynth()
	// n1 committed slot t0+13 with token T in term 2, paused, and n2 (term
	// 3) re-dispatched it with T+1 before firing t0+14; the paused n1's
	// attempt arrived last and was refused.
	s.h.Jobs[0].CheckTo = t0 + 14
	t1, t2, t3 := s.token+1, s.token+2, s.token+3
	s.token += 3
	s.addRun(Run{ID: fmt.Sprintf("a-%d", t1), Job: "a", Generation: 1, Slot: t0 + 13, Kind: "SCHEDULED", State: "SUCCEEDED",
		Attempts: []RunAttempt{
			{Number: 1, Token: t1, Kind: "SCHEDULED", Node: "n1", Term: 2, State: "SUPERSEDED"},
			{Number: 2, Token: t2, Kind: "REDISPATCH", Node: "n2", Term: 3, State: "SUCCEEDED"},
		}})
	s.addRun(Run{ID: fmt.Sprintf("a-%d", t3), Job: "a", Generation: 1, Slot: t0 + 14, Kind: "SCHEDULED", State: "SUCCEEDED",
		Attempts: []RunAttempt{{Number: 1, Token: t3, Kind: "SCHEDULED", Node: "n2", Term: 3, State: "SUCCEEDED"}}})
	for i := range s.ledgers {
		s.ledgers[i].Token = s.token
	}
	s.receive(Attempt{Job: "a", RunID: fmt.Sprintf("a-%d", t1), Slot: t0 + 13, Token: t2, Number: 2, Sender: "n2", Outcome: Applied})
	s.receive(Attempt{Job: "a", RunID: fmt.Sprintf("a-%d", t3), Slot: t0 + 14, Token: t3, Number: 1, Sender: "n2", Outcome: Applied})
	s.receive(Attempt{Job: "a", RunID: fmt.Sprintf("a-%d", t1), Slot: t0 + 13, Token: t1, Number: 1, Sender: "n1", Outcome: Stale})
	s.h.Status = append(s.h.Status, StatusPoint{Node: "n2", State: "leader", Term: 3})
	s.h.Expect = Expect{LeaderChanges: 2, StaleAttempts: 1, Registry: true}
	rep := s.check(t)
	wantOK(t, rep)
	if rep.Stats.StaleRefused != 1 || rep.Stats.Redispatched != 1 {
		t.Fatalf("stats = %+v, want 1 stale refused, 1 re-dispatched", rep.Stats)
	}
}

func TestCheckG1TwoRunsForOneSlot(t *testing.T) {
	s := newSynth()
	s.token++
	s.addRun(Run{ID: fmt.Sprintf("a-%d", s.token), Job: "a", Generation: 1, Slot: t0 + 5, Kind: "SCHEDULED", State: "SUCCEEDED",
		Attempts: []RunAttempt{{Number: 1, Token: s.token, Kind: "SCHEDULED", Node: "n1", Term: 2, State: "SUCCEEDED"}}})
	s.receive(Attempt{Job: "a", RunID: fmt.Sprintf("a-%d", s.token), Slot: t0 + 5, Token: s.token, Number: 1, Sender: "n1", Outcome: Duplicate})
	rep := s.check(t)
	wantBroken(t, rep, RuleG1, "committed twice")
	wantBroken(t, rep, RuleG1, "two run ids")
}

func TestCheckG1MissedRangeOverlappingAFiredSlot(t *testing.T) {
	s := newSynth()
	s.addRun(Run{ID: "a-m99-0", Job: "a", Generation: 1, Slot: t0 + 3, LastSlot: t0 + 6, MissedCount: 4, Kind: "SCHEDULED",
		State: StateMissed, Reason: "catchup_window"})
	wantBroken(t, s.check(t), RuleG1, "committed twice")
}

func TestCheckG2AttemptNeverCommitted(t *testing.T) {
	s := newSynth()
	s.receive(Attempt{Job: "a", RunID: "a-999", Slot: t0 + 12, Token: 999, Number: 1, Sender: "n1", Outcome: Duplicate})
	wantBroken(t, s.check(t), RuleG2, "never committed")
}

func TestCheckG2CannotVouchForAttemptsBeforeACompactedLog(t *testing.T) {
	s := newSynth()
	// The log was compacted under a snapshot and the ledger pruned the
	// first runs: their attempts can be neither confirmed nor refuted.
	for i := range s.ledgers {
		s.ledgers[i].FirstIndex = 6
		s.ledgers[i].Fires = s.ledgers[i].Fires[5:]
		s.ledgers[i].Runs = s.ledgers[i].Runs[5:]
	}
	rep := s.check(t)
	if rep.Broke(RuleG2) || rep.Stats.Unverifiable == 0 || len(rep.Inconclusive) == 0 {
		t.Fatalf("want unverifiable attempts reported inconclusive, not G2 violations:\n%s", rep)
	}
}

func TestCheckG2AttemptSentByAnotherNodeThanItsCommitter(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "a", t0+4)
	var token uint64
	s.run(id, func(r *Run) { token = r.Attempts[0].Token })
	s.receive(Attempt{Job: "a", RunID: id, Slot: t0 + 4, Token: token, Number: 1, Sender: "n2", Outcome: Duplicate})
	wantBroken(t, s.check(t), RuleG2, "committed by n1 but dispatched by n2")
}

func TestCheckG2AttemptReceivedBeforeItWasProposed(t *testing.T) {
	for _, skew := range []bool{false, true} {
		s := newSynth()
		s.h.ClockSkew = skew
		// The sink got the run of t0+4 a second before the leader that
		// committed it proposed it: someone sent a guess.
		id := s.runID(t, "a", t0+4)
		s.run(id, func(r *Run) { r.Attempts[0].Dispatched = time.Unix(t0+5, 0).UnixNano() })
		rep := s.check(t)
		if skew {
			wantOK(t, rep) // an offset clock makes the comparison meaningless
			continue
		}
		wantBroken(t, rep, RuleG2, "before n1 proposed it")
	}
}

func TestCheckG2TokenGivenToAnotherAttempt(t *testing.T) {
	s := newSynth()
	// The token of slot t0+4 arrives for slot t0+12 under another run id:
	// the sender guessed a token instead of waiting for the commit.
	id := s.runID(t, "a", t0+4)
	var token uint64
	s.run(id, func(r *Run) { token = r.Attempts[0].Token })
	s.receive(Attempt{Job: "a", RunID: "a-guess", Slot: t0 + 12, Token: token, Number: 1, Sender: "n1", Outcome: Duplicate})
	wantBroken(t, s.check(t), RuleG2, "the ledger gave that token to")
}

func TestCheckG2NodesDisagree(t *testing.T) {
	s := newSynth()
	s.ledgers[1].Runs[1].State = "FAILED"
	s.ledgers[1].StateHash = "other"
	rep := s.check(t)
	wantBroken(t, rep, RuleG2, "hold different state")
	wantBroken(t, rep, RuleG2, "differs between")
}

func TestCheckG2SucceededButNeverReceived(t *testing.T) {
	s := newSynth()
	s.h.Attempts = s.h.Attempts[:len(s.h.Attempts)-1] // the last run's request is gone
	wantBroken(t, s.check(t), RuleG2, "never received")
}

func TestCheckG3OneTokenTwoAttempts(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "a", t0+7)
	s.run(id, func(r *Run) { r.Attempts[0].Token = 3 })
	for i := range s.ledgers {
		s.ledgers[i].Fires = nil
	}
	wantBroken(t, s.check(t), RuleG3, "was committed for 2 attempts")
}

func TestCheckG3TokensNotRisingInLogOrder(t *testing.T) {
	s := newSynth()
	f := s.ledgers[0].Fires
	f[3].Token, f[4].Token = f[4].Token, f[3].Token
	wantBroken(t, s.check(t), RuleG3, "not rising in log order")
}

func TestCheckG3RetryWithoutANewToken(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "a", t0+8)
	s.run(id, func(r *Run) {
		r.Attempts = append(r.Attempts, RunAttempt{Number: 2, Token: r.Attempts[0].Token, Kind: "RETRY", Node: "n1", Term: 2, State: "SUCCEEDED"})
	})
	wantBroken(t, s.check(t), RuleG3, "not above")
}

func TestCheckG3TokenReusedAfterKillAll(t *testing.T) {
	s := newSynth()
	// Every node was killed after slot t0+12; after the restart a new
	// run got token 5 again (the counter went back) and the sink saw it.
	kill := time.Unix(t0+12, 500_000_000)
	s.h.Events = []Event{{At: kill, Kind: EvKillAll}, {At: kill.Add(2 * time.Second), Kind: EvRestartAll}}
	s.receive(Attempt{Job: "a", RunID: "a-5b", Slot: t0 + 15, Token: 5, Number: 1, Received: kill.Add(3 * time.Second), Outcome: Stale})
	rep := s.check(t)
	wantBroken(t, rep, RuleG3, "after the kill-all")
	wantBroken(t, rep, RuleG3, "carried by two attempts")
}

func TestCheckG3StaleAttemptTookEffect(t *testing.T) {
	s := newSynth()
	// A paused leader's attempt of slot t0+13 (token T) arrives after the
	// new leader's re-dispatch (T+1) took effect, and a sink without a
	// fence applies it.
	s.h.Jobs[0].CheckTo = t0 + 13
	t1, t2 := s.token+1, s.token+2
	s.token += 2
	id := fmt.Sprintf("a-%d", t1)
	s.addRun(Run{ID: id, Job: "a", Generation: 1, Slot: t0 + 13, Kind: "SCHEDULED", State: "SUCCEEDED",
		Attempts: []RunAttempt{
			{Number: 1, Token: t1, Kind: "SCHEDULED", Node: "n1", Term: 2, State: "SUPERSEDED"},
			{Number: 2, Token: t2, Kind: "REDISPATCH", Node: "n2", Term: 3, State: "SUCCEEDED"},
		}})
	for i := range s.ledgers {
		s.ledgers[i].Token = s.token
	}
	s.receive(Attempt{Job: "a", RunID: id, Slot: t0 + 13, Token: t2, Number: 2, Sender: "n2", Outcome: Applied})
	s.receive(Attempt{Job: "a", RunID: id, Slot: t0 + 13, Token: t1, Number: 1, Sender: "n1", Outcome: Applied})
	rep := s.check(t)
	wantBroken(t, rep, RuleG3, "stale attempt took effect")
	wantBroken(t, rep, RuleG4, "took effect 2 times")
}

func TestCheckG4SlotMissing(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "a", t0+6)
	for i := range s.ledgers {
		var kept []Run
		for _, r := range s.ledgers[i].Runs {
			if r.ID != id {
				kept = append(kept, r)
			}
		}
		s.ledgers[i].Runs = kept
	}
	wantBroken(t, s.check(t), RuleG4, "is missing")
}

func TestCheckG4SlotRecordedMissed(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "m", t0+9)
	s.run(id, func(r *Run) { r.State, r.Reason, r.Attempts = StateMissed, "catchup_window", nil })
	rep := s.check(t)
	wantBroken(t, rep, RuleG4, "recorded missed (catchup_window)")
}

func TestCheckG4OverlapSkipOnlyWhileARunIsOpen(t *testing.T) {
	for _, open := range []bool{true, false} {
		s := newSynth()
		// Slot t0+6 of a was skipped for overlap. The run of t0+5 was
		// committed at t0+5 and finished either after t0+6 came due (a
		// long run: the policy at work) or before it (a lost slot).
		s.skipForOverlap(t, "a", t0+6)
		finished := time.Unix(t0+6, 0).Add(300 * time.Millisecond).UnixNano()
		if !open {
			finished = time.Unix(t0+5, 0).Add(300 * time.Millisecond).UnixNano()
		}
		prev := s.runID(t, "a", t0+5)
		s.run(prev, func(r *Run) { r.CreatedAt, r.FinishedAt = time.Unix(t0+5, 0).UnixNano(), finished })
		rep := s.check(t)
		if open {
			wantOK(t, rep)
			if rep.Stats.OverlapSkipped != 1 {
				t.Fatalf("overlap-skipped = %d, want 1", rep.Stats.OverlapSkipped)
			}
			continue
		}
		wantBroken(t, rep, RuleG4, "no run of the job was open when it came due (the last run before it, "+prev+
			", was committed at 12:00:05.000 and counted open until 12:00:05.300)")
	}
}

func TestCheckG4OverlapSkipUnderAnOffsetSchedulerClock(t *testing.T) {
	s := newSynth()
	// The leader's scheduler clock ran 30 s ahead of its executor's: the
	// run of t0+5 was created at t0+5.9 (scheduler) and ran 400 ms
	// (executor), so it was open when t0+6 came due on the leader's clock.
	s.h.ClockSkew = true
	s.skipForOverlap(t, "a", t0+6)
	created := time.Unix(t0+5, 900_000_000).UnixNano()
	s.run(s.runID(t, "a", t0+5), func(r *Run) {
		r.CreatedAt = created
		r.Attempts[0].Started = created - int64(30*time.Second)
		r.Attempts[0].Finished = r.Attempts[0].Started + int64(400*time.Millisecond)
		r.FinishedAt = r.Attempts[0].Finished
	})
	wantOK(t, s.check(t))
}

// The run of t0+5 was committed on time and waited 11 s for a worker of
// its pool (a failover: the workers were reconnecting) before it ran for
// 800 ms: it was open when t0+6 came due, and the skip is the job's policy
// at work, although the run was open longer than it ran.
func TestCheckG4OverlapSkipWhileARunWaitsForAWorker(t *testing.T) {
	s := newSynth()
	s.skipForOverlap(t, "a", t0+6)
	s.run(s.runID(t, "a", t0+5), func(r *Run) {
		r.CreatedAt = time.Unix(t0+5, 0).UnixNano()
		r.Attempts[0].Started = r.CreatedAt + int64(11*time.Second)
		r.Attempts[0].Finished = r.Attempts[0].Started + int64(800*time.Millisecond)
		r.FinishedAt = r.Attempts[0].Finished
	})
	rep := s.check(t)
	wantOK(t, rep)
	if rep.Stats.OverlapSkipped != 1 {
		t.Fatalf("overlap-skipped = %d, want 1", rep.Stats.OverlapSkipped)
	}
}

func TestCheckG4OverlapWithALateCatchUpRunIsALostSlot(t *testing.T) {
	s := newSynth()
	// After an outage the run of t0+4 was caught up 1.8 s late and was
	// still running when t0+6 came due; t0+6 was skipped for overlap.
	s.skipForOverlap(t, "a", t0+6)
	s.run(s.runID(t, "a", t0+4), func(r *Run) {
		r.CreatedAt = time.Unix(t0+5, 800_000_000).UnixNano()
		r.FinishedAt = time.Unix(t0+6, 200_000_000).UnixNano()
	})
	wantBroken(t, s.check(t), RuleG4, "started 1.8s late, caught up after an outage")
}

func TestCheckG4RunStillOpen(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "a", t0+10)
	s.run(id, func(r *Run) { r.State = StateDispatched; r.Attempts[0].State = StateDispatched })
	wantBroken(t, s.check(t), RuleG4, "still DISPATCHED")
}

func TestCheckG4AtLeastOnceRunWithoutEffect(t *testing.T) {
	s := newSynth()
	for i := range s.h.Attempts {
		if s.h.Attempts[i].Job == "a" && s.h.Attempts[i].Slot == t0+11 {
			s.h.Attempts[i].Outcome = Duplicate
		}
	}
	rep := s.check(t)
	wantBroken(t, rep, RuleG4, "took effect 0 times")
	wantBroken(t, rep, RuleG4, "succeeded but no attempt of it took effect")
}

func TestCheckG4NewerSlotBeforeRedispatch(t *testing.T) {
	s := newSynth()
	// The new leader (term 3) fired slot t0+14 with token T+1 before
	// re-dispatching the orphan of t0+13 with T+2.
	s.h.Jobs[0].CheckTo = t0 + 14
	t1, t2, t3 := s.token+1, s.token+2, s.token+3
	s.token += 3
	orphan := fmt.Sprintf("a-%d", t1)
	s.addRun(Run{ID: orphan, Job: "a", Generation: 1, Slot: t0 + 13, Kind: "SCHEDULED", State: "SUCCEEDED",
		Attempts: []RunAttempt{
			{Number: 1, Token: t1, Kind: "SCHEDULED", Node: "n1", Term: 2, State: "SUPERSEDED"},
			{Number: 2, Token: t3, Kind: "REDISPATCH", Node: "n2", Term: 3, State: "SUCCEEDED"},
		}})
	newer := fmt.Sprintf("a-%d", t2)
	s.addRun(Run{ID: newer, Job: "a", Generation: 1, Slot: t0 + 14, Kind: "SCHEDULED", State: "SUCCEEDED",
		Attempts: []RunAttempt{{Number: 1, Token: t2, Kind: "SCHEDULED", Node: "n2", Term: 3, State: "SUCCEEDED"}}})
	for i := range s.ledgers {
		s.ledgers[i].Fires = nil
		s.ledgers[i].Token = s.token
	}
	s.receive(Attempt{Job: "a", RunID: newer, Slot: t0 + 14, Token: t2, Number: 1, Sender: "n2", Outcome: Applied})
	s.receive(Attempt{Job: "a", RunID: orphan, Slot: t0 + 13, Token: t3, Number: 2, Sender: "n2", Outcome: Applied})
	wantBroken(t, s.check(t), RuleG4, "before the re-dispatch")
}

func TestCheckG4AtMostOnceRepeated(t *testing.T) {
	s := newSynth()
	id := s.runID(t, "m", t0+6)
	s.token++
	s.run(id, func(r *Run) {
		r.Attempts = append(r.Attempts, RunAttempt{Number: 2, Token: s.token, Kind: "REDISPATCH", Node: "n1", Term: 2, State: "SUCCEEDED"})
	})
	for i := range s.ledgers {
		s.ledgers[i].Fires = nil
		s.ledgers[i].Token = s.token
	}
	s.receive(Attempt{Job: "m", RunID: id, Slot: t0 + 6, Token: s.token, Number: 2, Sender: "n1", Outcome: Duplicate})
	rep := s.check(t)
	wantBroken(t, rep, RuleG4, "it was repeated")
	wantBroken(t, rep, RuleG4, "attempt 2 of")
}

func TestCheckG6StaleRead(t *testing.T) {
	s := newSynth()
	// A read that starts after the update returned still sees version 1.
	s.h.Registry = append(s.h.Registry,
		RegistryOp{Client: 2, Key: "k", Kind: OpGet, Call: 60, Return: 70, Result: ResOK, Version: 1, Got: "v1"})
	rep := s.check(t)
	wantBroken(t, rep, RuleG6, "not linearizable")
	wantBroken(t, rep, RuleG6, "[k]")
}

func TestCheckG6LostAcknowledgedWrite(t *testing.T) {
	s := newSynth()
	s.h.Registry = append(s.h.Registry,
		RegistryOp{Client: 0, Key: "j", Kind: OpCreate, Value: "x", Call: 100, Return: 110, Result: ResOK, Version: 1},
		RegistryOp{Client: 1, Key: "j", Kind: OpGet, Call: 120, Return: 130, Result: ResNotFound})
	wantBroken(t, s.check(t), RuleG6, "[j]")
}

func TestCheckG6UnknownWriteMayOrMayNotHaveHappened(t *testing.T) {
	for _, seen := range []bool{true, false} {
		s := newSynth()
		s.h.Registry = append(s.h.Registry,
			RegistryOp{Client: 0, Key: "k", Kind: OpUpdate, Value: "v3", Call: 60, Return: 2000, Result: ResUnknown, Error: "deadline"},
			RegistryOp{Client: 1, Key: "k", Kind: OpGet, Call: 3000, Return: 3010, Result: ResOK, Version: 2, Got: "v2"})
		if seen {
			s.h.Registry[len(s.h.Registry)-1].Version, s.h.Registry[len(s.h.Registry)-1].Got = 3, "v3"
		}
		rep := s.check(t)
		wantOK(t, rep)
		if rep.Stats.RegistryUnsure != 1 {
			t.Fatalf("unknown outcomes = %d, want 1", rep.Stats.RegistryUnsure)
		}
	}
}

func TestCheckG6VersionMismatchMustBeReal(t *testing.T) {
	s := newSynth()
	// The update says version 2 was stale although nothing changed since
	// the client read version 2.
	s.h.Registry = append(s.h.Registry,
		RegistryOp{Client: 0, Key: "k", Kind: OpUpdate, Value: "v3", Expected: 2, Call: 60, Return: 70, Result: ResMismatch})
	wantBroken(t, s.check(t), RuleG6, "not linearizable")
}

func TestCheckInconclusiveRuns(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *synth)
		want   string
	}{
		{"no attempts", func(s *synth) { s.h.Attempts = nil }, "no attempts recorded: is the scheduler wired?"},
		{"no leader change", func(s *synth) { s.h.Status = s.h.Status[:1] }, "0 leader change(s)"},
		{"no stale attempt", func(s *synth) { s.h.Expect.StaleAttempts = 1 }, "0 stale attempt(s)"},
		{"no ledger", func(s *synth) { s.ledgers = nil }, "no run ledger"},
		{"no registry ops", func(s *synth) { s.h.Registry = nil }, "registry churn recorded no operation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSynth()
			c.mutate(s)
			rep := s.check(t)
			if rep.OK() {
				t.Fatal("a run that proves nothing passed")
			}
			found := false
			for _, msg := range rep.Inconclusive {
				found = found || strings.Contains(msg, c.want)
			}
			if !found {
				t.Fatalf("want inconclusive %q, got:\n%s", c.want, rep)
			}
		})
	}
}

func TestCheckContractKeyMustNameJobAndSlot(t *testing.T) {
	s := newSynth()
	s.h.Attempts[0].Key = "a/yesterday"
	wantBroken(t, s.check(t), RuleContract, "Idempotency-Key")
}

func TestHistoryRoundTrip(t *testing.T) {
	s := newSynth()
	path := t.TempDir() + "/history.json"
	if err := Save(path, &s.h); err != nil {
		t.Fatal(err)
	}
	var back History
	if err := Load(path, &back); err != nil {
		t.Fatal(err)
	}
	wantOK(t, Check(&back, s.ledgers, CheckOptions{}))
	if len(back.Attempts) != len(s.h.Attempts) || len(back.Registry) != len(s.h.Registry) {
		t.Fatal("history lost records in a save and load")
	}
}
