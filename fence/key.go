package fence

import "time"

// The idempotency key names a run, never an attempt: every attempt of a run carries
// the same key, and no other run carries it. It takes one of two forms:
//
//   - SlotKey, "<job>/<scheduled-at>", for a run that fires a slot of its job's
//     schedule (scheduled and catch-up fires, and their retries and
//     re-dispatches): G1 allows one run per slot, so the slot names it;
//   - RunKey, "<job>/<kind>/<run id>", for a run that is not a slot of its own
//     (kind "manual" for `job trigger`): its scheduled-at is only the second
//     it was fired in, which other runs may share.
//
// A receiver treats the key as an opaque string: it stores the key as it arrives and
// never rebuilds it from the other fields, which cannot tell the two forms apart.

// SlotKey is the key of a run that fires the slot at scheduledAt.
func SlotKey(job string, scheduledAt time.Time) string {
	return job + "/" + FormatScheduledAt(scheduledAt)
}

// RunKey is the key of a run of kind (a lowercase word, e.g. "manual") that is
// not a slot of its own.
func RunKey(job, kind, runID string) string {
	return job + "/" + kind + "/" + runID
}

// v1RunKind is the one kind a v1 signature's run key may name: the kinds that come
// after v2 are signed by v2 only, which covers the key itself.
const v1RunKind = "manual"

// v1KeyFits reports whether run's key is one of the two a v1 signature's fields imply:
// its slot's, or the manual run key of its own run id. Which of the two is not signed.
func v1KeyFits(run Run) bool {
	return run.IdempotencyKey == SlotKey(run.Job, run.ScheduledAt) ||
		run.IdempotencyKey == RunKey(run.Job, v1RunKind, run.RunID)
}
