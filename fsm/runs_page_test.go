package fsm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/raftcron/raftcron/fsm"
)

// TestRunsPageFollowsTheKey: paging by the key of the last run gives every
// run once, in ListRuns' order, for every job and for one.
func TestRunsPageFollowsTheKey(t *testing.T) {
	h := ledgerHarness(t)
	for _, job := range []string{"", "a", "b"} {
		var got []string
		q := fsm.RunQuery{Job: job, Limit: 1}
		for range 10 {
			p := h.f.RunsPage(q)
			got = append(got, ids(p.Runs)...)
			if p.Next == (fsm.RunKey{}) {
				break
			}
			q.After = p.Next
		}
		if want := ids(h.f.ListRuns(job, 0)); !slices.Equal(got, want) {
			t.Errorf("pages of %q: %v, want %v", job, got, want)
		}
	}
}

// scopedLedger holds the runs of 40 jobs of team hr, between a run of
// job "mine" of team billing before them all and one after them all.
func scopedLedger(t *testing.T) (*harness, []string) {
	h := newHarness(t)
	mine := testSpec("mine")
	h.create(mine)
	first := h.accepted(manualFire("mine", "", false)).GetRun()
	h.finish(first, stSucceeded, h.now)
	for i := range 40 {
		spec := testSpec(fmt.Sprintf("hr-%02d", i))
		spec.Labels = map[string]string{"team": "hr"}
		h.create(spec)
		h.accepted(manualFire(spec.GetName(), "", false))
	}
	last := h.accepted(manualFire("mine", "", false)).GetRun()
	return h, []string{last.GetId(), first.GetId()}
}

// TestScopedRunsPageLooksAtABoundedPart: a selector that matches few runs
// of a large ledger costs each call at most MaxScan runs looked at (under
// the read lock), and paging on still finds every run in scope.
func TestScopedRunsPageLooksAtABoundedPart(t *testing.T) {
	h, want := scopedLedger(t)
	billing := map[string]string{"team": "billing"}
	if all := h.f.RunsPage(fsm.RunQuery{Selector: billing}); all.Scanned != 42 || !slices.Equal(ids(all.Runs), want) {
		t.Fatalf("unbounded page: %v after %d runs, want %v after all 42", ids(all.Runs), all.Scanned, want)
	}
	q := fsm.RunQuery{Selector: billing, Limit: 20, MaxScan: 10}
	var got []string
	calls := 0
	for ; calls < 10; calls++ {
		p := h.f.RunsPage(q)
		if p.Scanned > q.MaxScan {
			t.Fatalf("call %d looked at %d runs, more than MaxScan %d", calls+1, p.Scanned, q.MaxScan)
		}
		got = append(got, ids(p.Runs)...)
		if p.Next == (fsm.RunKey{}) {
			break
		}
		q.After = p.Next
	}
	if !slices.Equal(got, want) || calls != 4 {
		t.Fatalf("paged %v in %d calls, want %v in 5 (42 runs, 10 a call)", got, calls+1, want)
	}
}

// TestScopedRunsPageStopsAtAFullPage: a full page says where to go on
// only if a run in scope follows, and the token is the last run returned.
func TestScopedRunsPageStopsAtAFullPage(t *testing.T) {
	h, want := scopedLedger(t)
	billing := map[string]string{"team": "billing"}
	p := h.f.RunsPage(fsm.RunQuery{Selector: billing, Limit: 1})
	if !slices.Equal(ids(p.Runs), want[:1]) || p.Next.ID != want[0] {
		t.Fatalf("page %v, next %+v; want %v, next at it", ids(p.Runs), p.Next, want[:1])
	}
	p = h.f.RunsPage(fsm.RunQuery{Selector: billing, Limit: 1, After: p.Next})
	if !slices.Equal(ids(p.Runs), want[1:]) || p.Next != (fsm.RunKey{}) {
		t.Fatalf("second page %v, next %+v; want %v and no more", ids(p.Runs), p.Next, want[1:])
	}
	hr := h.f.RunsPage(fsm.RunQuery{Job: "hr-07", Selector: billing})
	if len(hr.Runs) != 0 || hr.Next != (fsm.RunKey{}) {
		t.Fatalf("a job out of scope: %v", ids(hr.Runs))
	}
	in := h.f.RunsPage(fsm.RunQuery{Job: "hr-07", Selector: map[string]string{"team": "hr"}}).Runs
	if len(in) != 1 || in[0].GetJob() != "hr-07" {
		t.Fatalf("a job in scope: %v", ids(in))
	}
}
