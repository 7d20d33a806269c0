package fsm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// parentEvent is one outcome of a parent in an interleaving.
type parentEvent struct {
	job     string
	outcome pb.RunState
}

// chainModel is what a child should do, stated plainly: every qualifying
// parent run replaces that parent's earlier one in the pending set; once
// the set meets the mode, the child fires with it and starts over.
type chainModel struct {
	on      map[string]pb.DependencyOn
	mode    pb.AfterMode
	pending map[string]string // parent job → run id
	fired   [][]string        // each fire's parent run ids, by parent name
}

func (m *chainModel) ran(job, runID string, outcome pb.RunState) {
	ok := outcome == stSucceeded
	if m.on[job] == onFailure {
		ok = outcome != stSucceeded
	} else if m.on[job] == onAny {
		ok = true
	}
	if !ok {
		return
	}
	m.pending[job] = runID
	if m.mode == modeAll && len(m.pending) < len(m.on) {
		return
	}
	var set []string
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range m.pending {
			if !yield(k) {
				return
			}
		}
	}) {
		set = append(set, m.pending[p])
	}
	m.fired = append(m.fired, set)
	clear(m.pending)
}

// Every interleaving of up to four outcomes of two parents, for both
// modes and the kinds of dependency, each outcome in an entry of its own
// or two in one entry: the child fires exactly when the model says, once
// per qualifying set, with that set as its parents, and with a token above
// each of them.
func TestChainFiresOncePerSetOverInterleavings(t *testing.T) {
	outcomes := []parentEvent{{"a", stSucceeded}, {"a", stFailed}, {"b", stSucceeded}, {"b", stDeadline}}
	ons := [][2]pb.DependencyOn{{onSuccess, onSuccess}, {onFailure, onSuccess}, {onAny, onAny}}
	cases := 0
	for _, mode := range []pb.AfterMode{modeAll, modeAny} {
		for _, on := range ons {
			for seq := range 256 {
				events := make([]parentEvent, 4)
				for i := range events {
					events[i] = outcomes[seq>>(2*i)&3]
				}
				for _, paired := range []bool{false, true} {
					name := fmt.Sprintf("%v/%v-%v/%d/paired=%v", mode, on[0], on[1], seq, paired)
					checkInterleaving(t, name, mode, on, events, paired)
					cases++
				}
			}
		}
	}
	t.Logf("%d interleavings", cases)
}

func checkInterleaving(t *testing.T, name string, mode pb.AfterMode, on [2]pb.DependencyOn, events []parentEvent, paired bool) {
	t.Helper()
	h := newHarness(t)
	h.create(withOverlap(testSpec("a"), pb.Overlap_OVERLAP_ALLOW))
	h.create(withOverlap(testSpec("b"), pb.Overlap_OVERLAP_ALLOW))
	child := childSpec("c", mode, dep("a", on[0]), dep("b", on[1]))
	child.Overlap = pb.Overlap_OVERLAP_ALLOW
	h.create(child)
	m := &chainModel{on: map[string]pb.DependencyOn{"a": on[0], "b": on[1]}, mode: mode, pending: map[string]string{}}
	tokens := map[string]uint64{}
	for i := 0; i < len(events); {
		n := 1
		if paired && i+1 < len(events) {
			n = 2
		}
		var cs []*pb.Completion
		for _, ev := range events[i : i+n] {
			r := h.accepted(manualFire(ev.job, "", true)).GetRun()
			cs = append(cs, done(r, ev.outcome, h.now))
			m.ran(ev.job, r.GetId(), ev.outcome)
			tokens[r.GetId()] = tokenOfRun(r)
		}
		h.completeAs(cs...)
		i += n
	}
	got := h.chainedRuns("c")
	if len(got) != len(m.fired) {
		t.Fatalf("%s: %d chained runs %v, want %d with parents %v", name, len(got), got, len(m.fired), m.fired)
	}
	for i, r := range got {
		if !slices.Equal(parentIDs(r), m.fired[i]) {
			t.Fatalf("%s: run %d has parents %v, want %v", name, i, parentIDs(r), m.fired[i])
		}
		for _, p := range r.GetParents() {
			if tokenOfRun(r) <= p.GetToken() || p.GetToken() != tokens[p.GetRunId()] {
				t.Fatalf("%s: run %s token %d, parent %s token %d (want %d, below the child's)",
					name, r.GetId(), tokenOfRun(r), p.GetRunId(), p.GetToken(), tokens[p.GetRunId()])
			}
		}
	}
}

// A chained run is committed in the entry that records its parent's
// outcome: kind CHAINED, slot the entry's second, the proposing leader's
// attempt, its parents with their tokens, in the entry's result; the
// parent's run finds it downstream, and the child's cursor stays.
func TestChainedRunIsCommittedWithItsParentsOutcome(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("export"))
	h.create(childSpec("load", modeAll, dep("export", onSuccess)))
	cursor := h.status("load").GetCursorUnix()
	parent, res := h.ran("export", stSucceeded)
	if len(res.GetChained()) != 1 {
		t.Fatalf("result chained %v, want the child's run", res.GetChained())
	}
	r := h.run(res.GetChained()[0].GetId())
	a := fsm.CurrentAttempt(r)
	switch {
	case r.GetKind() != kindChained || r.GetState() != stDispatched || a.GetKind() != kindChained:
		t.Fatalf("chained run %v", r)
	case r.GetSlotUnix() != h.now.Unix() || r.GetCreatedAtUnixNano() != h.now.UnixNano():
		t.Fatalf("slot %d, created %d; want the entry's time %v", r.GetSlotUnix(), r.GetCreatedAtUnixNano(), h.now)
	case a.GetNodeId() != leaderID || a.GetTerm() != leaderTerm || a.GetToken() != tokenOfRun(parent)+1:
		t.Fatalf("attempt %v, want the leader's, token %d", a, tokenOfRun(parent)+1)
	case len(r.GetParents()) != 1 || r.GetParents()[0].GetRunId() != parent.GetId() ||
		r.GetParents()[0].GetToken() != tokenOfRun(parent) || r.GetParents()[0].GetState() != stSucceeded ||
		r.GetParents()[0].GetFinishedAtUnixNano() != h.now.UnixNano():
		t.Fatalf("parents %v, want %s at token %d, finished at the entry's time", r.GetParents(), parent.GetId(), tokenOfRun(parent))
	case h.status("load").GetCursorUnix() != cursor:
		t.Fatal("a chained run moved the child's cursor")
	}
	if kids := h.f.ChildRuns(parent.GetId()); len(kids) != 1 || kids[0].GetRunId() != r.GetId() || kids[0].GetToken() != a.GetToken() {
		t.Fatalf("ChildRuns(%s) = %v, want %s", parent.GetId(), kids, r.GetId())
	}
	if got := h.f.Dependents("export"); !slices.Equal(got, []string{"load"}) {
		t.Fatalf("Dependents = %v", got)
	}
	// The chained run ends like any other, counted in its job's status
	// (retries: TestChainedRunRetriesThenFiresItsChild).
	h.finish(r, stSucceeded, h.now)
	if st := h.status("load"); st.GetSucceeded() != 1 || len(st.GetPendingParents()) != 0 {
		t.Fatalf("status after the chained run: %v", st)
	}
}

// A chained run's failure is retried like any run's: the retry is an
// attempt of the same run, under a new token, with the same parents; no
// grandchild fires until the run's final outcome, and then once.
func TestChainedRunRetriesThenFiresItsChild(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(withRetry(childSpec("b", modeAll, dep("a", onSuccess)), 2, time.Second, time.Second))
	h.create(childSpec("c", modeAll, dep("b", onSuccess)))
	parent, res := h.ran("a", stSucceeded)
	b := res.GetChained()[0]
	if got := h.complete(done(b, stFailed, h.now))[0].GetRun(); got.GetState() != stRetrying || len(h.chainedRuns("c")) != 0 {
		t.Fatalf("after the first attempt failed: %v, c's chained runs %v", got, h.chainedRuns("c"))
	}
	h.now = h.now.Add(time.Minute)
	retried := h.accepted(retryFire("b", b.GetId())).GetRun()
	if retried.GetId() != b.GetId() || tokenOfRun(retried) <= tokenOfRun(b) || !slices.Equal(parentIDs(retried), []string{parent.GetId()}) {
		t.Fatalf("retry %v: want run %s again, a larger token, parent %s", retried, b.GetId(), parent.GetId())
	}
	res = h.completeAs(done(retried, stSucceeded, h.now))
	if len(res.GetChained()) != 1 || res.GetChained()[0].GetParents()[0].GetToken() != tokenOfRun(retried) {
		t.Fatalf("chained after b's retry succeeded: %v, want c's run with parent token %d", res.GetChained(), tokenOfRun(retried))
	}
}

// Two qualifying outcomes in one entry for a child with after_mode any
// fire it twice in the same second: two runs with their own ids and
// tokens, each with its own parent.
func TestTwoChainedRunsInOneSecond(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(testSpec("b"))
	h.create(withOverlap(childSpec("c", modeAny, dep("a", onSuccess), dep("b", onSuccess)), pb.Overlap_OVERLAP_ALLOW))
	ra := h.accepted(manualFire("a", "", false)).GetRun()
	rb := h.accepted(manualFire("b", "", false)).GetRun()
	res := h.completeAs(done(ra, stSucceeded, h.now), done(rb, stSucceeded, h.now))
	got := res.GetChained()
	if len(got) != 2 || got[0].GetSlotUnix() != got[1].GetSlotUnix() || got[0].GetId() == got[1].GetId() ||
		parentIDs(got[0])[0] != ra.GetId() || parentIDs(got[1])[0] != rb.GetId() {
		t.Fatalf("chained %v, want two runs of one second, one per parent", got)
	}
}

// A paused child records the set SKIPPED paused and spends it; after a
// resume the next set fires.
func TestPausedChildRecordsSkipped(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess)))
	h.mustOK(pauseCmd("c", true, "maintenance"))
	parent, res := h.ran("a", stSucceeded)
	rec := res.GetChained()
	if len(rec) != 1 || rec[0].GetState() != stSkipped || rec[0].GetReason() != fsm.ReasonPaused ||
		rec[0].GetKind() != kindChained || !slices.Equal(parentIDs(rec[0]), []string{parent.GetId()}) ||
		len(rec[0].GetAttempts()) != 0 {
		t.Fatalf("chained %v, want a SKIPPED paused record of the set", rec)
	}
	if st := h.status("c"); len(st.GetPendingParents()) != 0 || st.GetMissed() != 0 || len(st.GetOpenRunIds()) != 0 {
		t.Fatalf("status %v: want the set spent, nothing missed or open", st)
	}
	h.mustOK(pauseCmd("c", false, ""))
	if _, res := h.ran("a", stSucceeded); len(res.GetChained()) != 1 || res.GetChained()[0].GetState() != stDispatched {
		t.Fatalf("after resume: %v", res.GetChained())
	}
}

// The overlap policy applies to chained fires: skip records the set
// MISSED, buffer_one keeps it until the open run ends and the buffered
// slot releases it as a chained run, cancel_other cancels the open run.
func TestChainedFiresFollowOverlap(t *testing.T) {
	t.Run("skip", func(t *testing.T) {
		h := newHarness(t)
		h.create(testSpec("a"))
		h.create(childSpec("c", modeAll, dep("a", onSuccess)))
		h.ran("a", stSucceeded)
		_, res := h.ran("a", stSucceeded)
		if rec := res.GetChained(); len(rec) != 1 || rec[0].GetState() != stMissed || rec[0].GetReason() != fsm.ReasonOverlapSkipped {
			t.Fatalf("second set while the first runs: %v", rec)
		}
	})
	t.Run("buffer_one", func(t *testing.T) {
		h := newHarness(t)
		h.create(testSpec("a"))
		h.create(withOverlap(childSpec("c", modeAll, dep("a", onSuccess)), pb.Overlap_OVERLAP_BUFFER_ONE))
		h.ran("a", stSucceeded)
		kept, _ := h.ran("a", stSucceeded)
		st := h.status("c")
		if st.GetBufferedSlotUnix() == 0 || len(st.GetBufferedParents()) != 1 || st.GetBufferedParents()[0].GetRunId() != kept.GetId() {
			t.Fatalf("status %v: want the second set buffered", st)
		}
		if _, res := h.ran("a", stSucceeded); res.GetChained()[0].GetReason() != fsm.ReasonOverlapSkipped {
			t.Fatalf("a third set with one buffered: %v", res.GetChained())
		}
		h.finishOpen("c")
		rel := h.accepted(slotFire("c", 1, st.GetBufferedSlotUnix())).GetRun()
		if rel.GetKind() != kindChained || !slices.Equal(parentIDs(rel), []string{kept.GetId()}) {
			t.Fatalf("released %v, want a chained run of the kept set", rel)
		}
		if st := h.status("c"); st.GetBufferedSlotUnix() != 0 || len(st.GetBufferedParents()) != 0 {
			t.Fatalf("status after the release %v", st)
		}
	})
	t.Run("cancel_other", func(t *testing.T) {
		h := newHarness(t)
		h.create(testSpec("a"))
		h.create(withOverlap(childSpec("c", modeAll, dep("a", onSuccess)), pb.Overlap_OVERLAP_CANCEL_OTHER))
		_, first := h.ran("a", stSucceeded)
		_, res := h.ran("a", stSucceeded)
		if h.run(first.GetChained()[0].GetId()).GetState() != stCancelled || res.GetChained()[0].GetState() != stDispatched {
			t.Fatalf("cancel_other: first %v, second %v", h.run(first.GetChained()[0].GetId()), res.GetChained())
		}
	})
}

// after_within: a parent run counts only that long after it finished.
func TestAfterWithinLetsOldParentRunsGo(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(testSpec("b"))
	h.create(within(childSpec("c", modeAll, dep("a", onSuccess), dep("b", onSuccess)), 90*time.Second))
	h.ran("a", stSucceeded)
	h.now = h.now.Add(2 * time.Minute)
	rb, res := h.ran("b", stSucceeded)
	if len(res.GetChained()) != 0 {
		t.Fatalf("fired on a parent run older than after_within: %v", res.GetChained())
	}
	if p := h.status("c").GetPendingParents(); len(p) != 1 || p[0].GetRunId() != rb.GetId() {
		t.Fatalf("pending %v, want b's run only", p)
	}
	ra, res := h.ran("a", stSucceeded)
	if len(res.GetChained()) != 1 || !slices.Equal(parentIDs(res.GetChained()[0]), []string{ra.GetId(), rb.GetId()}) {
		t.Fatalf("fresh set: %v", res.GetChained())
	}
}

// A job with a schedule and dependencies fires its slots only while they
// are met within after_within; a slot that finds them unmet is SKIPPED
// dependency_not_met, and a fired slot spends the set.
func TestScheduledChildChecksItsDependencies(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	spec := within(childSpec("report", modeAll, dep("a", onSuccess)), time.Hour)
	spec.Schedule = "*/5 * * * *"
	gen := h.create(spec)
	slot := h.nextSlot("report")
	skip := h.fireOne(slotFire("report", gen, slot)).GetRun()
	if skip.GetState() != stSkipped || skip.GetReason() != fsm.ReasonDependencyNotMet || h.status("report").GetCursorUnix() != slot {
		t.Fatalf("slot without a parent run: %v", skip)
	}
	parent, res := h.ran("a", stSucceeded)
	if len(res.GetChained()) != 0 || len(h.status("report").GetPendingParents()) != 1 {
		t.Fatalf("a scheduled child fired on its parent: %v", res.GetChained())
	}
	slot = h.now.Unix() + 60
	r := h.accepted(slotFire("report", gen, slot)).GetRun()
	if r.GetKind() != kindScheduled || !slices.Equal(parentIDs(r), []string{parent.GetId()}) ||
		len(h.status("report").GetPendingParents()) != 0 {
		t.Fatalf("met slot: %v, pending %v", r, h.status("report").GetPendingParents())
	}
	h.finishOpen("report")
	h.ran("a", stSucceeded)
	late := h.now.Unix() + 2*3600
	if r := h.fireOne(slotFire("report", gen, late)).GetRun(); r.GetState() != stSkipped {
		t.Fatalf("a slot two hours after its parent's run, within 1h: %v", r)
	}
}

// An at_most_once parent given up as UNKNOWN after a failover fires its
// on: failure child in that FireBatch.
func TestUnknownParentFiresFailureChild(t *testing.T) {
	h := newHarness(t)
	parent := testSpec("nightly")
	parent.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	h.create(parent)
	h.create(childSpec("cleanup", modeAll, dep("nightly", onFailure)))
	r := h.accepted(manualFire("nightly", "", false)).GetRun()
	res := h.mustOK(fireBatchCmd("n2", leaderTerm+1, []*pb.Fire{redispatchFire("nightly", r.GetId())}, nil))
	got := res.GetChained()
	if len(got) != 1 || got[0].GetKind() != kindChained || fsm.CurrentAttempt(got[0]).GetNodeId() != "n2" ||
		got[0].GetParents()[0].GetState() != stUnknown {
		t.Fatalf("chained %v, want the cleanup fired by n2 after an unknown parent", got)
	}
}

// A CompleteBatch committed in another term than its leader's (it outlived
// it) still fires the child, with an attempt no leader holds: the next one
// re-dispatches it.
func TestChainedAttemptOfAStaleBatchIsAnOrphan(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess)))
	r := h.accepted(manualFire("a", "", false)).GetRun()
	data, err := proto.Marshal(&pb.Command{ProposedAtUnixNano: h.now.Add(time.Second).UnixNano(),
		Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
			Completions: []*pb.Completion{done(r, stSucceeded, h.now)}, LeaderId: leaderID, Term: leaderTerm,
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res := applyLog(t, h.f, &raft.Log{Index: h.index + 1, Term: leaderTerm + 1, Type: raft.LogCommand, Data: data})
	a := fsm.CurrentAttempt(res.GetChained()[0])
	if a.GetTerm() != 0 || a.GetNodeId() != "" {
		t.Fatalf("attempt %v, want no leader's", a)
	}
}

// Registration: a parent must exist unless the child waits for it, and be
// in the caller's scope; no cycle, also through an update; depth and
// fan-out within the put's limits; none of it below cluster version 3.
func TestDependencyRegistrationRules(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	r := h.mustFail(createCmd(childSpec("b", modeAll, dep("nope", onSuccess))), codeNotFound, fsm.ErrNotFound)
	if !strings.Contains(r.GetMessage(), `after[0].job: job "nope" not found (set after_missing: wait`) {
		t.Fatalf("missing parent: %s", r.GetMessage())
	}
	waiting := childSpec("b", modeAll, dep("nope", onSuccess))
	waiting.AfterMissing = pb.AfterMissing_AFTER_MISSING_WAIT
	h.create(waiting)

	h.create(childSpec("c", modeAll, dep("a", onSuccess)))
	h.create(childSpec("d", modeAll, dep("c", onSuccess)))
	r = h.mustFail(updateCmd(withAfter(testSpec("a"), "d"), 0), codeDepending, fsm.ErrDependency)
	if !strings.Contains(r.GetMessage(), `job "a" would close a cycle: a → c → d → a`) {
		t.Fatalf("cycle through an update: %s", r.GetMessage())
	}
	r = h.mustFail(createCmd(childSpec("nope", modeAll, dep("b", onSuccess))), codeDepending, fsm.ErrDependency)
	if !strings.Contains(r.GetMessage(), "nope → b → nope") {
		t.Fatalf("cycle through a waiting child: %s", r.GetMessage())
	}

	deep := putCmd(pb.PutMode_PUT_MODE_CREATE, childSpec("e", modeAll, dep("d", onSuccess)), 0)
	deep.GetPutJob().MaxChainDepth = 3
	r = h.mustFail(deep, codeDepending, fsm.ErrDependency)
	if !strings.Contains(r.GetMessage(), "chain of 4 jobs, longer than 3 (--max-chain-depth)") {
		t.Fatalf("depth: %s", r.GetMessage())
	}
	wide := putCmd(pb.PutMode_PUT_MODE_CREATE, childSpec("f", modeAll, dep("a", onSuccess)), 0)
	wide.GetPutJob().MaxChainFanout = 1
	r = h.mustFail(wide, codeDepending, fsm.ErrDependency)
	if !strings.Contains(r.GetMessage(), `1 jobs already run after "a", the most one job may have (--max-chain-fanout 1)`) {
		t.Fatalf("fan-out: %s", r.GetMessage())
	}
	// An update that keeps the parents passes whatever the limits.
	same := updateCmd(withLabel(childSpec("c", modeAll, dep("a", onSuccess)), "x"), 0)
	same.GetPutJob().MaxChainFanout, same.GetPutJob().MaxChainDepth = 1, 1
	h.mustOK(same)

	scoped := createCmd(childSpec("g", modeAll, dep("a", onSuccess)))
	scoped.GetPutJob().GetSpec().Labels = map[string]string{"team": "ops"}
	scoped.Caller = &pb.Caller{Principal: "ops", Selector: map[string]string{"team": "ops"}}
	if r := h.mustFail(scoped, codeNotFound, fsm.ErrNotFound); !strings.Contains(r.GetMessage(), `job "a" not found`) {
		t.Fatalf("parent outside the scope: %s", r.GetMessage())
	}

	old := newHarnessAt(t, 2)
	old.create(testSpec("a"))
	if r := old.mustFail(createCmd(childSpec("b", modeAll, dep("a", onSuccess))), codeInvalid, fsm.ErrInvalid); !strings.Contains(r.GetMessage(), "cluster version 2") {
		t.Fatalf("below version 3: %s", r.GetMessage())
	}
}

// Deleting a job others depend on needs force, names them, and leaves
// their dependency unmet until a job of the name runs again; the trail
// records it.
func TestDeletingAParent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(&pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 100}}})
	h.create(testSpec("a"))
	h.create(testSpec("b"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess), dep("b", onSuccess)))
	h.ran("a", stSucceeded)
	r := h.mustFail(deleteCmd("a", 0), codeDepending, fsm.ErrDependency)
	if !strings.Contains(r.GetMessage(), `job "a" is a parent (after) of c: delete or change them first, or delete with force`) {
		t.Fatalf("delete of a parent: %s", r.GetMessage())
	}
	force := deleteCmd("a", 0)
	force.GetDeleteJob().Force = true
	h.mustOK(force)
	if p := h.status("c").GetPendingParents(); len(p) != 0 {
		t.Fatalf("pending after the forced delete: %v", p)
	}
	rec := h.lastAudit()
	if rec.GetAction() != fsm.AuditDelete || !slices.ContainsFunc(rec.GetChanges(), func(c *pb.AuditChange) bool {
		return c.GetField() == "dependents" && c.GetAfter() == "c"
	}) {
		t.Fatalf("audit %v: want the dependents recorded", rec)
	}
	if _, res := h.ran("b", stSucceeded); len(res.GetChained()) != 0 {
		t.Fatalf("fired without a's run: %v", res.GetChained())
	}
	h.create(testSpec("a"))
	if _, res := h.ran("a", stSucceeded); len(res.GetChained()) != 1 {
		t.Fatalf("a created again: %v", res.GetChained())
	}
}

// Dropping a parent from after forgets its pending run and the edge; so
// does a dependency that no longer takes the run (on changed).
func TestUpdateDropsAParent(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(testSpec("b"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess), dep("b", onSuccess)))
	h.ran("a", stSucceeded)
	h.ran("b", stFailed)
	h.mustOK(updateCmd(childSpec("c", modeAll, dep("a", onFailure), dep("b", onSuccess)), 0))
	if p := h.status("c").GetPendingParents(); len(p) != 0 {
		t.Fatalf("pending %v after a's dependency turned to failure", p)
	}
	h.ran("a", stFailed)
	h.mustOK(updateCmd(childSpec("c", modeAll, dep("b", onSuccess)), 0))
	if p := h.status("c").GetPendingParents(); len(p) != 0 || len(h.f.Dependents("a")) != 0 {
		t.Fatalf("pending %v, dependents of a %v", p, h.f.Dependents("a"))
	}
	h.mustOK(deleteCmd("a", 0))
}

// The pending parents and the graph survive a snapshot: a restored node
// fires the child as the original does.
func TestChainsSurviveASnapshot(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(testSpec("b"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess), dep("b", onSuccess)))
	h.ran("a", stSucceeded)
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if restored.StateHash() != h.f.StateHash() {
		t.Fatal("restored state differs")
	}
	_, _ = h.ran("b", stSucceeded)
	for _, l := range h.log[len(h.log)-2:] {
		applyLog(t, restored, &l)
	}
	if restored.StateHash() != h.f.StateHash() || len(h.chainedRuns("c")) != 1 {
		t.Fatalf("after the restore: hashes equal %v, chained runs %d", restored.StateHash() == h.f.StateHash(), len(h.chainedRuns("c")))
	}
}

// The graph of one job: its ancestors and descendants, with missing
// parents and jobs outside the scope as missing.
func TestGraph(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(childSpec("b", modeAll, dep("a", onSuccess)))
	waiting := childSpec("c", modeAny, dep("b", onSuccess), dep("later", onAny))
	waiting.AfterMissing = pb.AfterMissing_AFTER_MISSING_WAIT
	h.create(waiting)
	h.create(testSpec("alone"))
	other := testSpec("x")
	other.Labels = map[string]string{"team": "ops"}
	h.create(other)
	h.create(withLabels(childSpec("y", modeAll, dep("x", onSuccess)), map[string]string{"team": "billing"}))

	names := func(g []fsm.GraphJob) string {
		var out []string
		for _, n := range g {
			s := n.Name
			if n.Job == nil {
				s += "?"
			}
			if len(n.Children) > 0 {
				s += ">" + strings.Join(n.Children, "+")
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	g, ok := h.f.Graph("b", nil)
	if want := "a>b b>c c"; !ok || names(g) != want {
		t.Fatalf("graph of b: %q, want %q", names(g), want)
	}
	g, _ = h.f.Graph("", nil)
	if want := "a>b b>c c later?>c x>y y"; names(g) != want {
		t.Fatalf("whole graph: %q, want %q", names(g), want)
	}
	billing := map[string]string{"team": "billing"}
	g, _ = h.f.Graph("", billing)
	if want := "a>b b>c c later?>c x?>y y"; names(g) != want {
		t.Fatalf("graph in scope: %q, want %q", names(g), want)
	}
	if _, ok := h.f.Graph("x", billing); ok {
		t.Fatal("a job outside the scope has a graph")
	}
}

func withAfter(spec *pb.JobSpec, parents ...string) *pb.JobSpec {
	for _, p := range parents {
		spec.After = append(spec.After, dep(p, onSuccess))
	}
	spec.AfterMode, spec.AfterMissing = modeAll, pb.AfterMissing_AFTER_MISSING_REFUSE
	return spec
}

func withLabel(spec *pb.JobSpec, v string) *pb.JobSpec {
	spec.Labels["extra"] = v
	return spec
}

func withLabels(spec *pb.JobSpec, labels map[string]string) *pb.JobSpec {
	spec.Labels = labels
	return spec
}

// The fields of chains are version 3: a put with dependencies, or a
// delete with force, waits for every voter to apply them; any other put
// or delete, and every CompleteBatch (whose leader fields an older build
// may ignore, since below version 3 nothing is chained), stays as it was.
func TestChainFieldsAreVersion3(t *testing.T) {
	force := deleteCmd("a", 0)
	force.GetDeleteJob().Force = true
	limited := createCmd(testSpec("a"))
	limited.GetPutJob().MaxChainDepth = 16
	for _, c := range []*pb.Command{createCmd(childSpec("b", modeAll, dep("a", onSuccess))), force, limited} {
		if v := fsm.VersionOf(c); v != 3 {
			t.Errorf("VersionOf(%v) = %d, want 3", c, v)
		}
	}
	batch := completeBatchCmd()
	batch.GetCompleteBatch().LeaderId, batch.GetCompleteBatch().Term = "n1", 4
	for _, c := range []*pb.Command{createCmd(testSpec("a")), deleteCmd("a", 0), batch} {
		if v := fsm.VersionOf(c); v != 1 {
			t.Errorf("VersionOf(%v) = %d, want 1", c, v)
		}
	}
}

// The trail renders a change of dependencies in the job file's form.
func TestAuditDiffOfDependencies(t *testing.T) {
	h := newHarness(t)
	h.mustOK(setAuditCmd(100, false))
	h.create(testSpec("a"))
	h.create(testSpec("b"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess)))
	h.mustOK(updateCmd(childSpec("c", modeAny, dep("a", onSuccess), dep("b", onFailure)), 0))
	got := map[string][2]string{}
	for _, c := range h.lastAudit().GetChanges() {
		got[c.GetField()] = [2]string{c.GetBefore(), c.GetAfter()}
	}
	want := map[string][2]string{
		"after":      {`[{"job":"a","on":"success"}]`, `[{"job":"a","on":"success"}, {"job":"b","on":"failure"}]`},
		"after_mode": {`"all"`, `"any"`},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
}

// A chained fire inside a freeze, or outside a calendar the child keeps to
// (only), is recorded SKIPPED with the rule's reason, as a slot would be;
// a deferring freeze skips it too (a chained set is not held back).
func TestFreezesAndCalendarsSkipChainedFires(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("a"))
	h.create(childSpec("c", modeAll, dep("a", onSuccess)))
	now := h.now.Unix()
	h.mustOK(createFreezeCmd(freezeOf("release", now, now+30, true, nil)))
	_, res := h.ran("a", stSucceeded)
	if rec := res.GetChained(); len(rec) != 1 || rec[0].GetState() != stSkipped || rec[0].GetReason() != fsm.ReasonFreezePrefix+"release" {
		t.Fatalf("inside a freeze: %v", rec)
	}
	h.mustOK(deleteFreezeCmd("release"))
	h.mustOK(putCalendarCmd(rangeCal("office", now-3600, now)))
	h.mustOK(updateCmd(withCalendars(childSpec("c", modeAll, dep("a", onSuccess)), nil, []string{"office"}), 0))
	if _, res := h.ran("a", stSucceeded); len(res.GetChained()) != 1 || res.GetChained()[0].GetReason() != fsm.ReasonCalendarPrefix+"office" {
		t.Fatalf("outside its only calendar: %v", res.GetChained())
	}
}
