package fsm

import (
	"bytes"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// maxOutput, maxDetail and maxReason bound what one attempt adds to the
	// state.
	maxOutput = 4096
	maxDetail = 4096
	maxReason = 64
)

// completeBatch records the outcomes executors reported. Each completion is
// decided on its own, in order; the batch as a whole never fails. A run's
// final outcome also fires, in this entry, the jobs that run after it
// (chain.go), whose attempts are the proposing leader's.
func completeBatch(s *state, c *pb.Command, e entry) (outcome, error) {
	cb := c.GetCompleteBatch()
	cs := cb.GetCompletions()
	b := batch{s: s, e: e, leader: cb.GetLeaderId(), term: cb.GetTerm(), maxOpen: cb.GetMaxOpenRuns(),
		slab: newRunSlab(len(cs))}
	if e.term != 0 && b.term != e.term {
		// Not the proposer's entry (it outlived its term): no leader holds
		// the chained attempts, which every leader's term then follows, so
		// the next one re-dispatches them or gives them up.
		b.leader, b.term = "", 0
	}
	backing := make([]pb.CompletionResult, len(cs))
	results := make([]*pb.CompletionResult, len(cs))
	for i, comp := range cs {
		results[i] = &backing[i]
		b.complete(comp, results[i])
	}
	return outcome{changed: s.tx.isDirty(), completions: results, chained: b.chained}, nil
}

// complete accepts an outcome only for the run's current attempt while it
// is still executing: a report carrying any other token comes from an
// attempt that was superseded, cancelled or already reported, and changes
// nothing (G3).
func (b *batch) complete(c *pb.Completion, res *pb.CompletionResult) {
	s, e := b.s, b.e
	r, ok := s.run(c.GetRunId())
	if !ok {
		res.Reason = ReasonUnknownRun
		return
	}
	cur := CurrentAttempt(r)
	if cur == nil || cur.GetToken() != c.GetToken() || cur.GetState() != pb.RunState_RUN_STATE_DISPATCHED ||
		r.GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		res.Reason = ReasonSuperseded
		return
	}
	if !isOutcome(c.GetOutcome()) {
		res.Reason = ReasonMalformed
		return
	}
	if isCheckin(r) && !s.checkinExpired(r, c, e) {
		res.Reason = ReasonNotDue
		return
	}
	a := copyAttempt(cur)
	a.State = c.GetOutcome()
	a.StartedAtUnixNano = c.GetStartedAtUnixNano()
	a.FinishedAtUnixNano = c.GetFinishedAtUnixNano()
	a.Detail = truncateString(c.GetDetail(), maxDetail)
	a.Output = truncateBytes(c.GetOutput(), maxOutput)
	nr := copyRun(r)
	nr.Attempts = replaceLast(r.GetAttempts(), a)
	nr.State = c.GetOutcome()
	v2 := s.atLeast(version2) // version 1 ignores reasons and generations here
	if c.GetReason() != "" && v2 {
		nr.Reason = truncateString(c.GetReason(), maxReason)
	}

	finishedAt := c.GetFinishedAtUnixNano()
	if finishedAt <= 0 {
		finishedAt = e.proposedAt
	}
	it, owned := s.owner(r)
	// A run of an earlier generation is never retried: the target it would
	// retry is gone.
	if owned && retryable(c, v2) && len(nr.Attempts) < maxAttempts(it.job.GetSpec()) &&
		(r.GetGeneration() == it.job.GetGeneration() || !v2) {
		nr.State = pb.RunState_RUN_STATE_RETRYING
		nr.NextAttemptAtUnixNano = addSaturating(finishedAt, backoff(s, it.job.GetSpec().GetRetry(), len(nr.Attempts)))
	} else {
		nr.FinishedAtUnixNano = finishedAt
	}
	if owned && !isOpen(nr.State) {
		next := copyStatus(it.status)
		next.OpenRunIds = removeID(next.OpenRunIds, nr.GetId())
		s.noteFinished(next, nr)
		note := ""
		if s.atLeast(version3) { // pause_after_failures and the count it reads
			note = countOutcome(it.job.GetSpec(), next, nr)
		}
		s.setStatus(it, next)
		if note != "" {
			s.pauseItself(it, next, note, e)
		}
	}
	s.putRun(nr)
	res.Accepted, res.Run = true, b.slab.clone(nr)
	if owned && !isOpen(nr.State) {
		b.parentFinished(nr)
	}
}

// isOutcome reports whether an executor may report st.
func isOutcome(st pb.RunState) bool {
	switch st {
	case pb.RunState_RUN_STATE_SUCCEEDED, pb.RunState_RUN_STATE_FAILED, pb.RunState_RUN_STATE_FENCED,
		pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, pb.RunState_RUN_STATE_CANCELLED:
		return true
	}
	return false
}

// retryable outcomes may be followed by another attempt. FENCED never is: a
// newer attempt exists, and retrying would only be fenced again. Nor is an
// attempt the node refused by its policy (a completion with a reason): the
// same policy would refuse every retry. Reasons count from cluster version
// 2 (v2) on.
func retryable(c *pb.Completion, v2 bool) bool {
	st := c.GetOutcome()
	return (c.GetReason() == "" || !v2) && (st == pb.RunState_RUN_STATE_FAILED || st == pb.RunState_RUN_STATE_DEADLINE_EXCEEDED)
}

// maxAttempts is the job's attempt budget: a run makes its first attempt
// in any case, and only a retry policy allows more.
func maxAttempts(spec *pb.JobSpec) int {
	return int(spec.GetRetry().GetMaxAttempts())
}

// backoff is the wait before attempt n+1 after attempt n failed:
// min(initial * 2^(n-1), max). The backoffs are the stored ones: the API
// stores them filled in (jobspec.Normalize), so the FSM keeps no defaults;
// an unset or negative one counts as zero (at cluster version 1: s.backoffs).
func backoff(s *state, r *pb.Retry, n int) time.Duration {
	initial, limit := s.backoffs(r)
	d := initial
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			d = limit
			break
		}
		d *= 2
	}
	return min(d, limit)
}

func addSaturating(t int64, d time.Duration) int64 {
	if t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return bytes.Clone(b[:n])
}

// truncateString cuts s to at most n bytes at a rune boundary, so the
// result stays valid UTF-8 and marshals.
func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}
