package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// chain adds job b, which runs after job a: for every run of a, a chained
// run of b committed with a's outcome (token after every one so far),
// dispatched by n1 and applied once at the sink with its parent.
func (s *synth) chain() {
	s.h.Chains = []ChainLink{{Parent: "a", Child: "b"}}
	var parents []Run
	for _, r := range s.ledgers[0].Runs {
		if r.Job == "a" {
			parents = append(parents, r)
		}
	}
	for _, p := range parents {
		s.token++
		id := fmt.Sprintf("b-%d", s.token)
		at := time.Unix(p.Slot, 0).Add(100 * time.Millisecond)
		s.addRun(Run{ID: id, Job: "b", Generation: 1, Slot: p.Slot, Kind: KindChained, State: StateSucceeded,
			Parents: []ParentRef{{Job: "a", RunID: p.ID, Token: p.Attempts[0].Token}},
			Attempts: []RunAttempt{{Number: 1, Token: s.token, Kind: KindChained, Node: "n1", Term: 2, State: StateSucceeded,
				Dispatched: at.UnixNano()}}})
		s.receive(Attempt{Job: "b", RunID: id, Slot: p.Slot, Token: s.token, Number: 1, Sender: "n1", Outcome: Applied,
			Received: at.Add(10 * time.Millisecond), Parents: fmt.Sprintf("%s@%d", p.ID, p.Attempts[0].Token)})
		s.h.Attempts[len(s.h.Attempts)-1].Key = "b/chained/" + id
	}
	for i := range s.ledgers {
		s.ledgers[i].Token = s.token
	}
}

func TestCheckChainsPassesACleanChain(t *testing.T) {
	s := newSynth()
	s.chain()
	rep := s.check(t)
	if !rep.OK() || rep.Stats.ChainedRuns != 12 || rep.Stats.ParentRuns != 12 {
		t.Fatalf("a clean chain: %s (stats %+v)", rep, rep.Stats)
	}
}

// Each way a chain can break is caught as a violation of RuleChains.
func TestCheckChainsCatchesBrokenChains(t *testing.T) {
	cases := []struct {
		name   string
		breaks func(t *testing.T, s *synth)
		want   string
	}{
		{"a child lost", func(t *testing.T, s *synth) { s.dropRun(s.childOf(t, s.runID(t, "a", t0+3))) },
			"succeeded but b has no run for it: the child was lost"},
		{"a child twice", func(t *testing.T, s *synth) {
			p := s.runID(t, "a", t0+3)
			s.token++
			s.addRun(Run{ID: "b-again", Job: "b", Generation: 1, Slot: t0 + 4, Kind: KindChained, State: "FAILED",
				Parents:  []ParentRef{{Job: "a", RunID: p, Token: 3}},
				Attempts: []RunAttempt{{Number: 1, Token: s.token, Kind: KindChained, Node: "n1", Term: 2, State: "FAILED"}}})
			for i := range s.ledgers {
				s.ledgers[i].Token = s.token
			}
		}, "has 2 runs of b"},
		{"a child below its parent", func(t *testing.T, s *synth) {
			s.run(s.childOf(t, s.runID(t, "a", t0+3)), func(r *Run) { r.Parents[0].Token = 1000 })
		}, "names parent"},
		{"a child for a failed parent", func(t *testing.T, s *synth) {
			s.run(s.runID(t, "a", t0+3), func(r *Run) { r.State, r.Attempts[0].State = "FAILED", "FAILED" })
		}, "which did not succeed"},
		{"a header that lies", func(t *testing.T, s *synth) {
			child := s.childOf(t, s.runID(t, "a", t0+3))
			for i := range s.h.Attempts {
				if s.h.Attempts[i].RunID == child {
					s.h.Attempts[i].Parents = "a-1@1"
				}
			}
		}, `arrived with parents "a-1@1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSynth()
			s.chain()
			tc.breaks(t, s)
			rep := s.check(t)
			if !rep.Broke(RuleChains) || !strings.Contains(rep.String(), tc.want) {
				t.Fatalf("want a %s violation mentioning %q, got:\n%s", RuleChains, tc.want, rep)
			}
		})
	}
}

// childOf is the id of b's run whose parent is the run id.
func (s *synth) childOf(t *testing.T, parent string) string {
	t.Helper()
	for _, r := range s.ledgers[0].Runs {
		if len(r.Parents) > 0 && r.Parents[0].RunID == parent {
			return r.ID
		}
	}
	t.Fatalf("no child of %s", parent)
	return ""
}

// dropRun removes a run from every ledger, its fires and its attempts at
// the sink: it was never committed.
func (s *synth) dropRun(id string) {
	for i := range s.ledgers {
		l := &s.ledgers[i]
		var runs []Run
		for _, r := range l.Runs {
			if r.ID != id {
				runs = append(runs, r)
			}
		}
		l.Runs = runs
		var fires []LogFire
		for _, f := range l.Fires {
			if f.RunID != id {
				fires = append(fires, f)
			}
		}
		l.Fires = fires
	}
	var atts []Attempt
	for _, a := range s.h.Attempts {
		if a.RunID != id {
			atts = append(atts, a)
		}
	}
	s.h.Attempts = atts
}
