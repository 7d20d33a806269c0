package fsm

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/raftcron/raftcron/internal/failpoint"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Chains: a job with dependencies (JobSpec.after) runs after other jobs.
// The entry that records a parent run's final outcome — a CompleteBatch,
// or the FireBatch that gives an orphan up as UNKNOWN — also decides, in
// the same Apply, what that outcome does for each job that runs after its
// job: it joins the child's pending parents, and a child without a
// schedule whose dependencies are then met fires a CHAINED run (token
// from the counter, so above the parent's) or records why not. No
// failover can therefore drop the child's fire or make it twice: it is
// committed exactly when the parent's outcome is. A child with a schedule
// fires on its slots only, each slot checking its pending parents
// (slotDependencies).

// ReasonDependencyNotMet: a slot of a job with dependencies found them
// not met (within after_within): recorded SKIPPED.
const ReasonDependencyNotMet = "dependency_not_met"

// qualifies reports whether a parent run that finished in state st counts
// for a dependency on it: success is SUCCEEDED; failure is a run that ran
// and did not succeed (FAILED, DEADLINE_EXCEEDED, FENCED, or UNKNOWN after
// a failover: the failures the run counters count); any is either. A run
// cancelled, missed or skipped never ran to an outcome: it counts for none.
func qualifies(on pb.DependencyOn, st pb.RunState) bool {
	switch on {
	case pb.DependencyOn_DEPENDENCY_ON_SUCCESS:
		return st == pb.RunState_RUN_STATE_SUCCEEDED
	case pb.DependencyOn_DEPENDENCY_ON_FAILURE:
		return failedState(st)
	case pb.DependencyOn_DEPENDENCY_ON_ANY:
		return st == pb.RunState_RUN_STATE_SUCCEEDED || failedState(st)
	}
	return false
}

// parentFinished applies the final outcome of r, just stored, to every
// job that runs after r's job. Only a run of the live job counts (the
// caller checks that the job owns it): a run of a deleted job of the same
// name is no run of the parent its dependents name.
func (b *batch) parentFinished(r *pb.Run) {
	kids := b.s.deps[r.GetJob()]
	if len(kids) == 0 {
		return
	}
	ref := &pb.RunRef{
		Job:                r.GetJob(),
		RunId:              r.GetId(),
		Token:              CurrentAttempt(r).GetToken(),
		State:              r.GetState(),
		FinishedAtUnixNano: b.e.proposedAt,
	}
	for _, child := range kids {
		b.parentRan(child, ref)
	}
}

// parentRan joins the parent run ref to child's pending parents if its
// outcome qualifies, replacing an older run of the same parent (a child
// fires once per set, however often one parent ran meanwhile). A child
// without a schedule fires once they meet its dependencies.
func (b *batch) parentRan(child string, ref *pb.RunRef) {
	it, ok := b.s.item(child)
	if !ok {
		return
	}
	spec := it.job.GetSpec()
	d := dependencyOn(spec, ref.GetJob())
	if d == nil || !qualifies(d.GetOn(), ref.GetState()) {
		return
	}
	next := copyStatus(it.status)
	next.PendingParents = withPending(it.status.GetPendingParents(), ref)
	if spec.GetSchedule() != "" {
		b.s.setStatus(it, next) // its slots decide
		return
	}
	set, met := metBy(spec, next.PendingParents, b.e.proposedAt)
	if !met {
		next.PendingParents = set
		b.s.setStatus(it, next)
		return
	}
	next.PendingParents = nil
	if failpoint.On(failpoint.ChainSeparateEntry) {
		// The negative control: the set is spent, but the child is left
		// for the leader to fire in an entry of its own.
		b.s.setStatus(it, next)
		b.chained = append(b.chained, &pb.Run{Job: child, Kind: pb.FireKind_FIRE_KIND_CHAINED, Parents: set})
		return
	}
	var res pb.FireResult
	b.fireChained(it, next, b.e.seconds(), set, &res)
	if res.GetRun() != nil {
		b.chained = append(b.chained, res.GetRun())
	}
}

// withPending is pending with ref in place of the run of ref's job, in
// the order of the parents' names; a fresh slice.
func withPending(pending []*pb.RunRef, ref *pb.RunRef) []*pb.RunRef {
	out := make([]*pb.RunRef, 0, len(pending)+1)
	for _, p := range pending {
		if p.GetJob() != ref.GetJob() {
			out = append(out, p)
		}
	}
	i, _ := slices.BinarySearchFunc(out, ref.GetJob(), func(p *pb.RunRef, job string) int {
		return strings.Compare(p.GetJob(), job)
	})
	return slices.Insert(out, i, ref)
}

// metBy reports whether the pending parents meet spec's dependencies at
// the time at: only runs that finished within after_within before it
// count (all of them without one). With after_mode all every parent needs
// one, with any one parent is enough. fresh is pending without the runs
// too old to count, which never count again.
func metBy(spec *pb.JobSpec, pending []*pb.RunRef, at int64) (fresh []*pb.RunRef, met bool) {
	since := int64(math.MinInt64)
	if w := spec.GetAfterWithin().AsDuration(); w > 0 && at > math.MinInt64+int64(w) {
		since = at - int64(w)
	}
	for _, p := range pending {
		if p.GetFinishedAtUnixNano() >= since {
			fresh = append(fresh, p)
		}
	}
	if spec.GetAfterMode() == pb.AfterMode_AFTER_MODE_ANY {
		return fresh, len(fresh) > 0
	}
	for _, d := range spec.GetAfter() {
		if !slices.ContainsFunc(fresh, func(p *pb.RunRef) bool { return p.GetJob() == d.GetJob() }) {
			return fresh, false
		}
	}
	return fresh, len(spec.GetAfter()) > 0
}

// fireChained fires child's run for the parents that met its dependencies,
// at slot (the second of the entry), through the job's rules as any fire:
// a paused job, a slot outside start_at..end_at, a calendar or a freeze
// that stops the slot (deferring or not: a chained set is not held back)
// records the set SKIPPED with the reason; the overlap policy may record it
// MISSED
// (overlap_skipped, open_runs_limit), cancel the open runs, or keep it
// until the open run ends (buffer_one: the slot and its parents wait in
// the status, released like a buffered slot). A chained run is not a slot
// of the job's schedule: like a manual one it leaves the cursor alone and
// is known by its run id, so two chained runs of one second are two runs.
func (b *batch) fireChained(it jobItem, next *pb.JobStatus, slot int64, parents []*pb.RunRef, res *pb.FireResult) {
	spec := it.job.GetSpec()
	if reason := b.chainGate(spec, slot); reason != "" {
		b.recordChained(it, next, slot, pb.RunState_RUN_STATE_SKIPPED, reason, parents, res)
		return
	}
	if len(next.GetOpenRunIds()) > 0 {
		switch spec.GetOverlap() {
		case pb.Overlap_OVERLAP_ALLOW:
			if b.atOpenLimit(next) {
				b.recordChained(it, next, slot, pb.RunState_RUN_STATE_MISSED, ReasonOpenRunsLimit, parents, res)
				return
			}
		case pb.Overlap_OVERLAP_CANCEL_OTHER:
			b.cancelOpen(next)
		case pb.Overlap_OVERLAP_BUFFER_ONE:
			if next.BufferedSlotUnix == 0 {
				next.BufferedSlotUnix, next.BufferedParents = slot, parents
				b.s.setStatus(it, next)
				res.Reason = ReasonBuffered
				return
			}
			b.recordChained(it, next, slot, pb.RunState_RUN_STATE_MISSED, ReasonOverlapSkipped, parents, res)
			return
		default:
			b.recordChained(it, next, slot, pb.RunState_RUN_STATE_MISSED, ReasonOverlapSkipped, parents, res)
			return
		}
	}
	b.accept(it, next, chainedFire, slot, false, parents, res)
}

// chainGate says why a chained fire of the job at slot may not run, or
// "": the rules of a slot (gate), then its calendars and the freezes that
// match it.
func (b *batch) chainGate(spec *pb.JobSpec, slot int64) string {
	if reason := gate(spec, slot); reason != "" {
		return reason
	}
	if b.s.stops(spec) {
		reason, _ := decide(b.s, spec, slot)
		return reason
	}
	return ""
}

// recordChained records a chained set that did not fire.
func (b *batch) recordChained(it jobItem, next *pb.JobStatus, slot int64, state pb.RunState, reason string,
	parents []*pb.RunRef, res *pb.FireResult) {
	pos := b.pos
	b.pos++
	b.recordWith(it, next, pos, pb.FireKind_FIRE_KIND_CHAINED, slot, state, reason, parents, res)
}

// releaseChained fires the chained set buffer_one kept, now that no run
// of the job is open: the SCHEDULED fire of its buffered slot releases it.
func (b *batch) releaseChained(it jobItem, next *pb.JobStatus, pos int, slot int64, parents []*pb.RunRef, res *pb.FireResult) {
	if reason := b.chainGate(it.job.GetSpec(), slot); reason != "" {
		b.recordWith(it, next, pos, pb.FireKind_FIRE_KIND_CHAINED, slot, pb.RunState_RUN_STATE_SKIPPED, reason, parents, res)
		return
	}
	b.accept(it, next, chainedFire, slot, false, parents, res)
}

// slotDependencies decides a slot of a job with dependencies: met (within
// after_within before the slot) it may fire, with the pending parents as
// its parents, which the caller spends once it fires; else it is recorded
// SKIPPED dependency_not_met and met is false. A job without dependencies
// is always met, with no parents.
func (b *batch) slotDependencies(it jobItem, next *pb.JobStatus, pos int, kind pb.FireKind, slot int64,
	res *pb.FireResult) (parents []*pb.RunRef, met bool) {
	spec := it.job.GetSpec()
	if len(spec.GetAfter()) == 0 {
		return nil, true
	}
	at := b.e.proposedAt // a slot beyond what nanoseconds hold cannot be one
	if slot < math.MaxInt64/int64(time.Second) && slot > math.MinInt64/int64(time.Second) {
		at = slot * int64(time.Second)
	}
	fresh, met := metBy(spec, next.GetPendingParents(), at)
	if !met {
		next.PendingParents = fresh
		b.recordWith(it, next, pos, kind, slot, pb.RunState_RUN_STATE_SKIPPED, ReasonDependencyNotMet, fresh, res)
		return nil, false
	}
	return fresh, true
}

// separateChained is the negative control's fire of a child in an entry
// of its own (failpoint chain-separate-entry), for the parent run it
// names: what a chain that keeps the child's fire in the leader's memory
// would propose.
func (b *batch) separateChained(f *pb.Fire, res *pb.FireResult) {
	it, ok := b.s.item(f.GetJob())
	if !ok {
		res.Reason = ReasonGone
		return
	}
	p, ok := b.s.run(f.GetRunId())
	if !ok {
		res.Reason = ReasonNotOpen
		return
	}
	parents := []*pb.RunRef{{Job: p.GetJob(), RunId: p.GetId(), Token: CurrentAttempt(p).GetToken(),
		State: p.GetState(), FinishedAtUnixNano: p.GetFinishedAtUnixNano()}}
	b.fireChained(it, copyStatus(it.status), b.e.seconds(), parents, res)
}

// chainedFire is what a chained run is accepted for: it has no fire of its
// own, the entry that recorded its parents' outcome fires it. Never written.
var chainedFire = &pb.Fire{Kind: pb.FireKind_FIRE_KIND_CHAINED}
