package fsm

import (
	"bytes"
	"slices"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Hand-written copies of the messages Apply touches on every fire. They are
// several times cheaper than proto.Clone, which matters for a batch of
// thousands of fires; a test checks that each one covers every field, so a
// field added to the proto cannot be dropped silently.
//
// A shallow copy ("copy…") shares what the original points to: use it only
// to derive a fresh value from a stored, immutable one, replacing — never
// changing — the shared parts. A deep copy ("clone…") shares nothing: use it
// for everything that leaves the FSM.

// copyStatus is a shallow copy: open_run_ids, pause and backfill are
// shared.
func copyStatus(s *pb.JobStatus) *pb.JobStatus {
	return &pb.JobStatus{
		CursorUnix:             s.GetCursorUnix(),
		LatestToken:            s.GetLatestToken(),
		Succeeded:              s.GetSucceeded(),
		Failed:                 s.GetFailed(),
		Missed:                 s.GetMissed(),
		LastRunId:              s.GetLastRunId(),
		LastOutcome:            s.GetLastOutcome(),
		LastFinishedAtUnixNano: s.GetLastFinishedAtUnixNano(),
		OpenRunIds:             s.GetOpenRunIds(),
		BufferedSlotUnix:       s.GetBufferedSlotUnix(),
		NextFireUnix:           s.GetNextFireUnix(),
		FirstGeneration:        s.GetFirstGeneration(),
		DeferredSlotUnix:       s.GetDeferredSlotUnix(),
		ConsecutiveFailures:    s.GetConsecutiveFailures(),
		LastSuccessUnixNano:    s.GetLastSuccessUnixNano(),
		LateSlotUnix:           s.GetLateSlotUnix(),
		PendingParents:         s.GetPendingParents(),
		BufferedParents:        s.GetBufferedParents(),
		FailuresInARow:         s.GetFailuresInARow(),
		SlotsFired:             s.GetSlotsFired(),
		Pause:                  s.GetPause(),
		Backfill:               s.GetBackfill(),
	}
}

func cloneStatus(s *pb.JobStatus) *pb.JobStatus {
	if s == nil {
		return nil
	}
	c := copyStatus(s)
	c.OpenRunIds = slices.Clone(s.GetOpenRunIds())
	c.PendingParents = cloneRefs(s.GetPendingParents())
	c.BufferedParents = cloneRefs(s.GetBufferedParents())
	if s.GetPause() != nil {
		c.Pause = proto.CloneOf(s.GetPause())
	}
	if s.GetBackfill() != nil {
		c.Backfill = proto.CloneOf(s.GetBackfill())
	}
	return c
}

// cloneRefs is a deep copy of refs, the refs allocated together.
func cloneRefs(refs []*pb.RunRef) []*pb.RunRef {
	if refs == nil {
		return nil
	}
	vals := make([]pb.RunRef, len(refs))
	out := make([]*pb.RunRef, len(refs))
	for i, r := range refs {
		vals[i] = pb.RunRef{Job: r.GetJob(), RunId: r.GetRunId(), Token: r.GetToken(),
			State: r.GetState(), FinishedAtUnixNano: r.GetFinishedAtUnixNano()}
		out[i] = &vals[i]
	}
	return out
}

// copyRun is a shallow copy: the attempts slice and the attempts are shared.
func copyRun(r *pb.Run) *pb.Run {
	c := &pb.Run{}
	copyRunInto(c, r)
	return c
}

// copyRunInto fills a zero dst with r's fields, attempts shared.
func copyRunInto(dst, r *pb.Run) {
	dst.Id = r.GetId()
	dst.Job = r.GetJob()
	dst.Generation = r.GetGeneration()
	dst.SlotUnix = r.GetSlotUnix()
	dst.Kind = r.GetKind()
	dst.State = r.GetState()
	dst.Reason = r.GetReason()
	dst.Attempts = r.GetAttempts()
	dst.CreatedAtUnixNano = r.GetCreatedAtUnixNano()
	dst.FinishedAtUnixNano = r.GetFinishedAtUnixNano()
	dst.NextAttemptAtUnixNano = r.GetNextAttemptAtUnixNano()
	dst.RequestId = r.GetRequestId()
	dst.LastSlotUnix = r.GetLastSlotUnix()
	dst.MissedCount = r.GetMissedCount()
	dst.OffSchedule = r.GetOffSchedule()
	dst.CloseRequestId = r.GetCloseRequestId()
	dst.JobDeleted = r.GetJobDeleted()
	dst.JudgedTooLong = r.GetJudgedTooLong()
	dst.Parents = r.GetParents()
	dst.Children = r.GetChildren()
	dst.JitterMs = r.GetJitterMs()
	dst.Payload = r.GetPayload()
	dst.Concurrent = r.GetConcurrent()
}

// cloneRun is a deep copy. The attempts of a run are allocated together, so
// a clone costs three allocations whatever its number of attempts.
func cloneRun(r *pb.Run) *pb.Run {
	if r == nil {
		return nil
	}
	c := copyRun(r)
	c.Parents, c.Children = cloneRefs(r.GetParents()), cloneRefs(r.GetChildren())
	src := r.GetAttempts()
	if src == nil {
		return c
	}
	atts := make([]pb.Attempt, len(src))
	c.Attempts = make([]*pb.Attempt, len(src))
	for i, a := range src {
		copyAttemptInto(&atts[i], a)
		unshareAttempt(&atts[i])
		c.Attempts[i] = &atts[i]
	}
	return c
}

// runSlab hands out deep clones of runs from a few allocations shared by
// a whole batch: the results of one entry are handed out, kept and dropped
// together, so sharing their memory costs nothing and saves three
// allocations per fire. Runs with more than one attempt, or beyond the
// slab's size, are cloned on their own.
type runSlab struct {
	runs []pb.Run
	atts []pb.Attempt
	ptrs []*pb.Attempt
	next int
}

func newRunSlab(n int) *runSlab {
	return &runSlab{runs: make([]pb.Run, n), atts: make([]pb.Attempt, n), ptrs: make([]*pb.Attempt, n)}
}

func (s *runSlab) clone(r *pb.Run) *pb.Run {
	if s == nil || s.next == len(s.runs) || len(r.GetAttempts()) > 1 {
		return cloneRun(r)
	}
	i := s.next
	s.next++
	c := &s.runs[i]
	copyRunInto(c, r)
	c.Parents, c.Children = cloneRefs(r.GetParents()), cloneRefs(r.GetChildren())
	if len(r.GetAttempts()) == 1 {
		a := &s.atts[i]
		copyAttemptInto(a, r.GetAttempts()[0])
		unshareAttempt(a)
		s.ptrs[i] = a
		c.Attempts = s.ptrs[i : i+1 : i+1] // an append by the caller must not reach the next run's
	}
	return c
}

// firstRun allocates a run and its only attempt together: one allocation
// instead of three on the hot path of a fire. The attempt is returned for
// the caller to fill. Any later change of the run replaces the whole value,
// so no piece of a box outlives the rest for long.
func firstRun() (*pb.Run, *pb.Attempt) {
	box := &struct {
		run  pb.Run
		att  pb.Attempt
		atts [1]*pb.Attempt
	}{}
	box.atts[0] = &box.att
	box.run.Attempts = box.atts[:]
	return &box.run, &box.att
}

// copyAttempt is a shallow copy: the output bytes are shared.
func copyAttempt(a *pb.Attempt) *pb.Attempt {
	c := &pb.Attempt{}
	copyAttemptInto(c, a)
	return c
}

// copyAttemptInto fills a zero dst with a's fields, output shared.
func copyAttemptInto(dst, a *pb.Attempt) {
	dst.Number = a.GetNumber()
	dst.Token = a.GetToken()
	dst.Kind = a.GetKind()
	dst.NodeId = a.GetNodeId()
	dst.Term = a.GetTerm()
	dst.DispatchedAtUnixNano = a.GetDispatchedAtUnixNano()
	dst.State = a.GetState()
	dst.StartedAtUnixNano = a.GetStartedAtUnixNano()
	dst.FinishedAtUnixNano = a.GetFinishedAtUnixNano()
	dst.Detail = a.GetDetail()
	dst.Output = a.GetOutput()
	dst.Progress = a.Progress // stored values are never changed in place: the pointer may be shared
	dst.ProgressMessage = a.GetProgressMessage()
	dst.ProgressAtUnixNano = a.GetProgressAtUnixNano()
	dst.ExitCode = a.ExitCode
	dst.PingedBy = a.GetPingedBy()
}

// unshareAttempt gives a shallow copy of its own of what it points to.
func unshareAttempt(a *pb.Attempt) {
	a.Output = bytes.Clone(a.Output)
	if a.ExitCode != nil {
		code := *a.ExitCode
		a.ExitCode = &code
	}
}

// setWithStatus makes dst a shallow copy of a stored job with its status
// filled in, for writing out (snapshot records); it shares everything.
func setWithStatus(dst, j *pb.Job, st *pb.JobStatus) {
	dst.Spec = j.GetSpec()
	dst.Generation = j.GetGeneration()
	dst.Version = j.GetVersion()
	dst.CreatedAt = j.GetCreatedAt()
	dst.UpdatedAt = j.GetUpdatedAt()
	dst.ModifyIndex = j.GetModifyIndex()
	dst.Status = st
	dst.UpdatedBy = j.GetUpdatedBy()
}
