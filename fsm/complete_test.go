package fsm_test

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCompletionSucceeds(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	finishedAt := h.now.Add(3 * time.Second)
	c := done(fired.GetRun(), stSucceeded, finishedAt)
	c.Output = bytes.Repeat([]byte("x"), 10000)
	c.Detail = strings.Repeat("é", 3000) // 6000 bytes, two per rune
	run := h.complete(c)[0].GetRun()

	a := fsm.CurrentAttempt(run)
	switch {
	case run.GetState() != stSucceeded || run.GetFinishedAtUnixNano() != finishedAt.UnixNano():
		t.Fatalf("run %v, want SUCCEEDED finished at the reported time", run)
	case a.GetState() != stSucceeded || a.GetStartedAtUnixNano() != c.GetStartedAtUnixNano() || a.GetFinishedAtUnixNano() != finishedAt.UnixNano():
		t.Fatalf("attempt %v, want the outcome and the reported times", a)
	case len(a.GetOutput()) != 4096:
		t.Fatalf("output of %d bytes kept, want it truncated to 4096", len(a.GetOutput()))
	case len(a.GetDetail()) > 4096 || !utf8.ValidString(a.GetDetail()) || len(a.GetDetail()) < 4094:
		t.Fatalf("detail of %d bytes (valid UTF-8: %v), want at most 4096 at a rune boundary", len(a.GetDetail()), utf8.ValidString(a.GetDetail()))
	}
	st := h.status("billing")
	if len(st.GetOpenRunIds()) != 0 || st.GetSucceeded() != 1 || st.GetLastRunId() != run.GetId() ||
		st.GetLastOutcome() != stSucceeded || st.GetLastFinishedAtUnixNano() != finishedAt.UnixNano() {
		t.Fatalf("status %v, want no open run, one success as the last outcome", st)
	}
	// A second report of the same attempt is superseded: it has its outcome.
	before := h.f.StateHash()
	if res := h.complete(done(fired.GetRun(), stFailed, finishedAt))[0]; res.GetAccepted() || res.GetReason() != fsm.ReasonSuperseded {
		t.Fatalf("second report: %v, want superseded", res)
	}
	if h.f.StateHash() != before {
		t.Fatal("a superseded report changed the state")
	}
}

func TestFailureRetriesWithExponentialCappedBackoff(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 5, 10*time.Second, 30*time.Second))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	run := fired.GetRun()
	tokens := []uint64{fired.GetToken()}
	// backoff(n) = min(10s * 2^(n-1), 30s) after attempt n.
	for n, want := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second} {
		finishedAt := h.now.Add(time.Duration(n+1) * 7 * time.Second)
		run = h.finish(run, stFailed, finishedAt)
		if run.GetState() != stRetrying || run.GetNextAttemptAtUnixNano() != finishedAt.Add(want).UnixNano() {
			t.Fatalf("after attempt %d: %v, want RETRYING at finished_at + %v", n+1, run, want)
		}
		if fsm.CurrentAttempt(run).GetState() != stFailed || run.GetFinishedAtUnixNano() != 0 {
			t.Fatalf("after attempt %d: %v, want the attempt FAILED and the run not finished", n+1, run)
		}
		if st := h.status("billing"); len(st.GetOpenRunIds()) != 1 || st.GetFailed() != 0 {
			t.Fatalf("status %v, want the run still open and nothing counted failed yet", st)
		}
		h.now = time.Unix(0, run.GetNextAttemptAtUnixNano()).Add(-time.Second) // the next entry is exactly due
		r := h.accepted(retryFire("billing", run.GetId()))
		run = r.GetRun()
		if r.GetAttempt() != uint32(n+2) || fsm.CurrentAttempt(run).GetKind() != kindRetry || run.GetState() != stDispatched ||
			run.GetNextAttemptAtUnixNano() != 0 || r.GetToken() <= tokens[len(tokens)-1] {
			t.Fatalf("retry %d: %v, want attempt %d DISPATCHED under a larger token", n+1, r, n+2)
		}
		tokens = append(tokens, r.GetToken())
	}
	// The fifth attempt was the last one allowed.
	run = h.finish(run, stFailed, h.now)
	if run.GetState() != stFailed || len(run.GetAttempts()) != 5 {
		t.Fatalf("after the last attempt: %v, want FAILED with 5 attempts", run)
	}
	for i, a := range run.GetAttempts() {
		if a.GetState() != stFailed || a.GetToken() != tokens[i] || a.GetNumber() != uint32(i+1) {
			t.Fatalf("attempt %d: %v, want FAILED with token %d", i+1, a, tokens[i])
		}
	}
	if st := h.status("billing"); st.GetFailed() != 1 || len(st.GetOpenRunIds()) != 0 || st.GetLastOutcome() != stFailed {
		t.Fatalf("status %v, want one failure and no open run", st)
	}
	h.refused(retryFire("billing", run.GetId()), fsm.ReasonNotOpen)
}

func TestRetryKeepsNoDefaultsAndRetriesDeadlines(t *testing.T) {
	h := newHarness(t)
	// Without a retry policy a failure is final.
	gen := h.create(testSpec("once"))
	run := h.finish(h.accepted(slotFire("once", gen, h.nextSlot("once"))).GetRun(), stFailed, h.now)
	if run.GetState() != stFailed {
		t.Fatalf("failure without retry policy: %v, want FAILED", run)
	}
	// The FSM keeps no backoff defaults (the API stores them filled in):
	// unset backoffs are zero. A deadline is retried like a failure.
	gen = h.create(withRetry(testSpec("defaults"), 2, 0, 0))
	run = h.accepted(slotFire("defaults", gen, h.nextSlot("defaults"))).GetRun()
	finishedAt := h.now
	run = h.finish(run, stDeadline, finishedAt)
	if run.GetState() != stRetrying || run.GetNextAttemptAtUnixNano() != finishedAt.UnixNano() {
		t.Fatalf("deadline with retries left and no backoffs: %v, want RETRYING at once", run)
	}
	run = h.accepted(retryFire("defaults", run.GetId())).GetRun()
	run = h.finish(run, stDeadline, h.now)
	if run.GetState() != stDeadline {
		t.Fatalf("deadline on the last attempt: %v, want DEADLINE_EXCEEDED", run)
	}
	if st := h.status("defaults"); st.GetFailed() != 1 || st.GetLastOutcome() != stDeadline {
		t.Fatalf("status %v, want the deadline counted as a failure", st)
	}
}

func TestRetryFireIsAcceptedOnlyWhenDue(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 3, time.Minute, time.Hour))
	run := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	h.refused(retryFire("billing", run.GetId()), fsm.ReasonNotOpen) // still executing
	run = h.finish(run, stFailed, h.now)
	h.refused(retryFire("billing", run.GetId()), fsm.ReasonNotDue)
	h.refused(retryFire("other", run.GetId()), fsm.ReasonNotOpen)
	h.refused(retryFire("billing", "billing-404"), fsm.ReasonNotOpen)
	h.now = time.Unix(0, run.GetNextAttemptAtUnixNano()) // past due by the next entry's second
	h.accepted(retryFire("billing", run.GetId()))
	h.refused(retryFire("billing", run.GetId()), fsm.ReasonNotOpen) // one retry per due time
}

func TestFencedIsNeverRetried(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 5, time.Second, time.Second))
	run := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	run = h.finish(run, stFenced, h.now)
	if run.GetState() != stFenced || run.GetFinishedAtUnixNano() == 0 {
		t.Fatalf("fenced attempt: %v, want the run FENCED and finished", run)
	}
	if st := h.status("billing"); st.GetFailed() != 1 || len(st.GetOpenRunIds()) != 0 {
		t.Fatalf("status %v, want FENCED counted failed, nothing open", st)
	}
	h.now = h.now.Add(time.Hour)
	h.refused(retryFire("billing", run.GetId()), fsm.ReasonNotOpen)
}

func TestCancelledOutcomeIsFinal(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 5, time.Second, time.Second))
	run := h.finish(h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun(), stCancelled, h.now)
	if run.GetState() != stCancelled {
		t.Fatalf("cancelled attempt: %v, want the run CANCELLED, not retried", run)
	}
}

func TestSupersededCompletionChangesNothing(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 3, time.Second, time.Second))
	old := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	// A new leader re-dispatches the run under a new token.
	newer := h.fireAs("n2", leaderTerm+1, []*pb.Fire{redispatchFire("billing", old.GetId())}, nil)[0]
	if !newer.GetAccepted() {
		t.Fatalf("redispatch: %v", newer)
	}
	before := h.f.StateHash()
	res := h.complete(
		done(old, stSucceeded, h.now),                                                      // the old token
		&pb.Completion{RunId: "billing-404", Token: 1, Outcome: stSucceeded},               // no such run
		&pb.Completion{RunId: old.GetId(), Token: newer.GetToken(), Outcome: stDispatched}, // not an outcome
	)
	want := []string{fsm.ReasonSuperseded, fsm.ReasonUnknownRun, fsm.ReasonMalformed}
	for i, r := range res {
		if r.GetAccepted() || r.GetReason() != want[i] {
			t.Fatalf("completion %d: %v, want refused %q", i, r, want[i])
		}
	}
	if h.f.StateHash() != before {
		t.Fatal("refused completions changed the state")
	}
	if h.run(old.GetId()).GetState() != stDispatched {
		t.Fatal("the run lost its current attempt to a superseded report")
	}
	// The current token is accepted.
	if run := h.finish(newer.GetRun(), stSucceeded, h.now); run.GetState() != stSucceeded {
		t.Fatalf("current attempt's report: %v", run)
	}
}

func TestRedispatchAtLeastOnceSupersedesWithLargerToken(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	h.create(testSpec("other"))
	orphan := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.accepted(slotFire("other", 1, h.nextSlot("other"))) // a later token of another job

	res := h.fireAs("n2", leaderTerm+1, []*pb.Fire{redispatchFire("billing", orphan.GetRunId())}, nil)[0]
	run := res.GetRun()
	atts := run.GetAttempts()
	switch {
	case !res.GetAccepted() || res.GetToken() != h.f.FencingToken() || res.GetToken() <= orphan.GetToken():
		t.Fatalf("redispatch: %v, want accepted with the newest token %d", res, h.f.FencingToken())
	case res.GetAttempt() != 2 || len(atts) != 2 || run.GetState() != stDispatched:
		t.Fatalf("redispatched run %v, want DISPATCHED with 2 attempts", run)
	case atts[0].GetState() != stSuperseded || atts[0].GetToken() != orphan.GetToken():
		t.Fatalf("old attempt %v, want SUPERSEDED", atts[0])
	case atts[1].GetKind() != kindRedispatch || atts[1].GetNodeId() != "n2" || atts[1].GetTerm() != leaderTerm+1:
		t.Fatalf("new attempt %v, want REDISPATCH by n2 in term %d", atts[1], leaderTerm+1)
	}
	if st := h.status("billing"); st.GetLatestToken() != res.GetToken() || len(st.GetOpenRunIds()) != 1 {
		t.Fatalf("status %v, want latest token %d and the run still open", st, res.GetToken())
	}
	// Now the run is the new leader's: not an orphan in its term.
	h.refused(redispatchFire("billing", orphan.GetRunId()), fsm.ReasonNotOrphan)
	if r := h.fireAs("n2", leaderTerm+1, []*pb.Fire{redispatchFire("billing", orphan.GetRunId())}, nil)[0]; r.GetAccepted() || r.GetReason() != fsm.ReasonNotOrphan {
		t.Fatalf("second redispatch in the same term: %v, want not_orphan", r)
	}
}

func TestRedispatchAtMostOnceMarksUnknown(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("billing")
	spec.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	gen := h.create(spec)
	orphan := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	token := h.f.FencingToken()
	res := h.fireAs("n2", leaderTerm+1, []*pb.Fire{redispatchFire("billing", orphan.GetRunId())}, nil)[0]
	run := res.GetRun()
	if res.GetAccepted() || res.GetReason() != fsm.ReasonUnknown || res.GetToken() != 0 || h.f.FencingToken() != token {
		t.Fatalf("at_most_once redispatch: %v, want refused as unknown without a token", res)
	}
	if run.GetState() != stUnknown || run.GetReason() != fsm.ReasonLeaderChanged || len(run.GetAttempts()) != 1 ||
		fsm.CurrentAttempt(run).GetState() != stUnknown || run.GetFinishedAtUnixNano() == 0 {
		t.Fatalf("run %v, want UNKNOWN (leader_changed), finished, its only attempt UNKNOWN", run)
	}
	if st := h.status("billing"); len(st.GetOpenRunIds()) != 0 || st.GetLastOutcome() != stUnknown {
		t.Fatalf("status %v, want nothing open and UNKNOWN as the last outcome", st)
	}
	// Its executor's late report changes nothing.
	if r := h.complete(done(orphan.GetRun(), stSucceeded, h.now))[0]; r.GetAccepted() {
		t.Fatalf("late report of an UNKNOWN attempt accepted: %v", r)
	}
}

func TestRedispatchOfCurrentTermIsNotOrphan(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 3, time.Hour, time.Hour))
	run := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	h.refused(redispatchFire("billing", run.GetId()), fsm.ReasonNotOrphan) // same term
	if r := h.fireAs(leaderID, leaderTerm-1, []*pb.Fire{redispatchFire("billing", run.GetId())}, nil)[0]; r.GetReason() != fsm.ReasonNotOrphan {
		t.Fatalf("redispatch from an older term: %v, want not_orphan", r)
	}
	if r := h.fireAs(leaderID, leaderTerm+1, []*pb.Fire{redispatchFire("other", run.GetId())}, nil)[0]; r.GetReason() != fsm.ReasonNotOrphan {
		t.Fatalf("redispatch naming another job: %v, want not_orphan", r)
	}
	run = h.finish(run, stFailed, h.now) // RETRYING: not an orphan either
	if r := h.fireAs(leaderID, leaderTerm+1, []*pb.Fire{redispatchFire("billing", run.GetId())}, nil)[0]; r.GetReason() != fsm.ReasonNotOrphan {
		t.Fatalf("redispatch of a RETRYING run: %v, want not_orphan", r)
	}
}

func TestDeleteKeepsExecutingRunsAndCancelsWaitingRetries(t *testing.T) {
	h := newHarness(t)
	spec := withOverlap(withRetry(testSpec("billing"), 3, time.Hour, time.Hour), pb.Overlap_OVERLAP_ALLOW)
	gen := h.create(spec)
	slot := h.nextSlot("billing")
	executing := h.accepted(slotFire("billing", gen, slot)).GetRun()
	orphan := h.accepted(slotFire("billing", gen, slot+1)).GetRun()
	waiting := h.finish(h.accepted(slotFire("billing", gen, slot+2)).GetRun(), stFailed, h.now)
	if waiting.GetState() != stRetrying {
		t.Fatalf("setup: %v, want RETRYING", waiting)
	}
	h.mustOK(deleteCmd("billing", 0))

	if r := h.run(waiting.GetId()); r.GetState() != stCancelled || r.GetReason() != fsm.ReasonDeleted {
		t.Fatalf("waiting retry after delete: %v, want CANCELLED (deleted)", r)
	}
	if open := ids(h.f.OpenRuns()); len(open) != 2 || open[0] != executing.GetId() || open[1] != orphan.GetId() {
		t.Fatalf("open runs after delete %v, want the two executing ones", open)
	}
	// An executing run finishes normally, without retries: its job is gone.
	if r := h.finish(executing, stFailed, h.now); r.GetState() != stFailed {
		t.Fatalf("failure of a deleted job's run: %v, want FAILED, not RETRYING", r)
	}
	// A new leader's re-dispatch of the other cancels it.
	res := h.fireAs("n2", leaderTerm+1, []*pb.Fire{redispatchFire("billing", orphan.GetId())}, nil)[0]
	if res.GetAccepted() || res.GetReason() != fsm.ReasonGone || res.GetRun().GetState() != stCancelled ||
		res.GetRun().GetReason() != fsm.ReasonDeleted || fsm.CurrentAttempt(res.GetRun()).GetState() != stCancelled {
		t.Fatalf("redispatch of a deleted job's run: %v, want refused gone and the run CANCELLED (deleted)", res)
	}
	if len(h.f.OpenRuns()) != 0 {
		t.Fatalf("open runs left: %v", ids(h.f.OpenRuns()))
	}
	// The history stays under the name, and a re-created job starts clean.
	if got := len(h.f.ListRuns("billing", 0)); got != 3 {
		t.Fatalf("%d runs kept under the name, want 3", got)
	}
	h.create(testSpec("billing"))
	if st := h.status("billing"); len(st.GetOpenRunIds()) != 0 || st.GetFailed() != 0 {
		t.Fatalf("re-created job's status %v, want a fresh one", st)
	}
}

func TestRunOfDeletedAndRecreatedJobStaysOutOfNewStatus(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	old := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	h.mustOK(deleteCmd("billing", 0))
	gen = h.create(withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_SKIP))
	// The old incarnation's run does not block the new job (overlap) ...
	h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	// ... and its outcome is not counted for it.
	h.finish(old, stSucceeded, h.now)
	if st := h.status("billing"); st.GetSucceeded() != 0 || st.GetLastRunId() == old.GetId() || len(st.GetOpenRunIds()) != 1 {
		t.Fatalf("status %v: the deleted job's run leaked into the new job's status", st)
	}
}

func TestHistoryIsPrunedToLimit(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("billing")
	spec.HistoryLimit = 3
	gen := h.create(spec)
	h.mustOK(pauseCmd("billing", true, ""))
	var missed []string
	for range 5 {
		missed = append(missed, h.missed(slotFire("billing", gen, h.nextSlot("billing")), fsm.ReasonPaused).GetId())
	}
	h.mustOK(pauseCmd("billing", false, ""))
	open := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()

	got := ids(h.f.ListRuns("billing", 0))
	want := []string{open.GetId(), missed[4], missed[3], missed[2]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("runs %v, want the open one and the newest 3 finished %v", got, want)
	}
	for _, id := range missed[:2] {
		if _, err := h.f.Run(id); err == nil {
			t.Fatalf("pruned run %s is still in the ledger", id)
		}
	}
	// Lowering the limit prunes at once.
	spec.HistoryLimit = 1
	h.mustOK(updateCmd(spec, 0))
	if got := ids(h.f.ListRuns("billing", 0)); len(got) != 2 || got[1] != missed[4] {
		t.Fatalf("runs %v after lowering the limit to 1, want the open run and %s", got, missed[4])
	}
	// A finished open run is history too; the limit counts it.
	h.finish(open, stSucceeded, h.now)
	if got := ids(h.f.ListRuns("billing", 0)); len(got) != 1 || got[0] != open.GetId() {
		t.Fatalf("runs %v, want only the newest finished run", got)
	}
}

// The FSM keeps no history limit of its own: a deleted name keeps the
// history its job left, and a job created again under it prunes to its own
// limit.
func TestDeletedNameKeepsItsJobsHistory(t *testing.T) {
	h := newHarness(t)
	spec := withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_ALLOW)
	spec.HistoryLimit = 20
	gen := h.create(spec)
	for range 15 {
		h.finish(h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun(), stSucceeded, h.now)
	}
	executing := h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun()
	h.mustOK(deleteCmd("billing", 0))
	if got := len(h.f.ListRuns("billing", 0)); got != 16 {
		t.Fatalf("%d runs under the deleted name, want its job's 15 finished and 1 executing", got)
	}
	h.finish(executing, stSucceeded, h.now)
	if got := len(h.f.ListRuns("billing", 0)); got != 16 {
		t.Fatalf("%d runs after the executing one finished, want all 16 kept", got)
	}
	again := testSpec("billing")
	again.HistoryLimit = 4
	h.create(again)
	if got := len(h.f.ListRuns("billing", 0)); got != 4 {
		t.Fatalf("%d runs after re-creating the job with history_limit 4, want 4", got)
	}
}

func TestCountersAndLastOutcome(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_ALLOW))
	slot := h.nextSlot("billing")
	a := h.accepted(slotFire("billing", gen, slot)).GetRun()
	b := h.accepted(slotFire("billing", gen, slot+1)).GetRun()
	c := h.accepted(slotFire("billing", gen, slot+2)).GetRun()
	h.finish(a, stSucceeded, h.now)
	h.finish(b, stFailed, h.now)
	h.fireAs(leaderID, leaderTerm, nil, []*pb.Miss{{Job: "billing", Generation: gen, FromSlotUnix: slot + 3, ToSlotUnix: slot + 9, Count: 7, Reason: "catchup_window"}})
	last := h.finish(c, stFenced, h.now.Add(time.Second))
	st := h.status("billing")
	if st.GetSucceeded() != 1 || st.GetFailed() != 2 || st.GetMissed() != 7 {
		t.Fatalf("counters %v, want 1 succeeded, 2 failed (failed + fenced), 7 missed", st)
	}
	if st.GetLastRunId() != last.GetId() || st.GetLastOutcome() != stFenced || st.GetLastFinishedAtUnixNano() != last.GetFinishedAtUnixNano() {
		t.Fatalf("last outcome %v, want the fenced run", st)
	}
	if st.GetLatestToken() != fsm.CurrentAttempt(c).GetToken() {
		t.Fatalf("latest token %d, want %d", st.GetLatestToken(), fsm.CurrentAttempt(c).GetToken())
	}
}

func TestPolicyRefusalIsFinalAndRecordsItsReason(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 5, time.Second, time.Second))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	c := done(fired.GetRun(), stFailed, h.now)
	c.Reason = "egress_denied"
	run := h.complete(c)[0].GetRun()
	if run.GetState() != stFailed || run.GetReason() != "egress_denied" || run.GetFinishedAtUnixNano() == 0 {
		t.Fatalf("run %v, want FAILED with reason egress_denied and finished: a refusal is not retried", run)
	}
	if st := h.status("billing"); st.GetFailed() != 1 || len(st.GetOpenRunIds()) != 0 {
		t.Fatalf("status %v, want one failure and no open run", st)
	}
	h.refused(retryFire("billing", run.GetId()), fsm.ReasonNotOpen)

	// An ordinary failure of the same job is still retried and has no reason.
	fired = h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	if run := h.finish(fired.GetRun(), stFailed, h.now); run.GetState() != stRetrying || run.GetReason() != "" {
		t.Fatalf("run %v, want RETRYING without a reason", run)
	}
}
