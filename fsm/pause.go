package fsm

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Why a job paused itself (PauseState.reason). The alerts' paused event
// reads them: never rename one.
const (
	PauseMaxRuns       = "max_runs"
	PauseAfterFailures = "pause_after_failures"
)

// NoteMaxRuns is the pause note of a job that fired its max_runs slots.
const NoteMaxRuns = "max_runs reached"

// setPaused pauses with a note, and with an end (until_unix) the leader
// resumes it at, or resumes, which clears all of them. A request that
// leaves the job as it is changes nothing.
func setPaused(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetSetPaused()
	name := p.GetName()
	if name == "" {
		return outcome{}, malformed("set_paused.name must not be empty")
	}
	until := p.GetUntilUnix()
	switch {
	case until != 0 && !p.GetPaused():
		return outcome{}, malformed("set_paused.until_unix is for a pause, not a resume")
	case until != 0 && until <= e.seconds():
		return outcome{}, fail(ErrInvalid, "until: %s is not after now (%s)", unixText(until), unixText(e.seconds()))
	}
	cur, exists := s.item(name)
	if !exists {
		return outcome{}, fail(ErrNotFound, "job %q not found", name)
	}
	old := cur.job
	spec := proto.Clone(old.GetSpec()).(*pb.JobSpec)
	spec.Paused = p.GetPaused()
	spec.PauseNote = ""
	st := cur.status
	if spec.Paused {
		spec.PauseNote = p.GetNote()
		st = withPause(st, until)
	} else if old.GetSpec().GetPaused() {
		st = resumed(st, e)
	}
	if proto.Equal(old.GetSpec(), spec) && st == cur.status {
		return outcome{job: old, status: cur.status}, nil
	}
	next := s.changedJob(old, spec, e)
	s.setJob(next, st)
	return outcome{job: next, status: st, changed: true}, nil
}

// withPause is st holding an operator's pause that ends at until (0: when
// resumed); st itself if it holds that already.
func withPause(st *pb.JobStatus, until int64) *pb.JobStatus {
	p := st.GetPause()
	if p.GetUntilUnix() == until && p.GetReason() == "" {
		return st
	}
	next := copyStatus(st)
	next.Pause = nil
	if until != 0 {
		next.Pause = &pb.PauseState{UntilUnix: until}
	}
	return next
}

// pauseFlipped is st after a put that changed the spec from old to spec:
// a put that clears paused resumes the job.
func pauseFlipped(old, spec *pb.JobSpec, st *pb.JobStatus, e entry) *pb.JobStatus {
	if old.GetPaused() && !spec.GetPaused() {
		return resumed(st, e)
	}
	return st
}

// resumed is st after a resume: no pause state, the count of failures in
// a row started again, and the cursor raised to now, so that the paused
// time is not caught up — unless the pause had an end: then its slots
// wait for the catch-up policy, as after an outage (the scheduler records
// those that could never be caught up missed, paused, while it lasts).
func resumed(st *pb.JobStatus, e entry) *pb.JobStatus {
	if st.GetPause().GetUntilUnix() == 0 {
		st = cursorAtLeast(st, e.seconds())
	}
	if st.GetPause() == nil && st.GetFailuresInARow() == 0 {
		return st
	}
	next := copyStatus(st)
	next.Pause = nil
	next.FailuresInARow = 0
	return next
}

// endPause resumes a job whose pause has come to its end: the leader
// proposes it, stamped with its own clock, for the end it read. If the
// pause changed meanwhile (resumed, paused again, another end) it changes
// nothing; an end still ahead of the entry's time is INVALID.
func endPause(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetEndPause()
	name, until := p.GetJob(), p.GetUntilUnix()
	if name == "" || until <= 0 {
		return outcome{}, malformed("end_pause needs a job and its pause's end")
	}
	cur, ok := s.item(name)
	if !ok {
		return outcome{}, fail(ErrNotFound, "job %q not found", name)
	}
	if !cur.job.GetSpec().GetPaused() || cur.status.GetPause().GetUntilUnix() != until {
		return outcome{job: cur.job, status: cur.status}, nil
	}
	if until > e.seconds() {
		return outcome{}, fail(ErrInvalid, "the pause of job %q ends at %s, after this entry's time %s",
			name, unixText(until), unixText(e.seconds()))
	}
	spec := proto.Clone(cur.job.GetSpec()).(*pb.JobSpec)
	spec.Paused, spec.PauseNote = false, ""
	st := resumed(cur.status, e)
	j := s.systemChange(cur, spec, st, e, AuditResume)
	return outcome{job: j, status: st, changed: true}, nil
}

// pauseItself pauses the job of it, whose fresh status next already holds
// the pause's reason, as the FSM's own decision (max_runs,
// pause_after_failures), with note for its operators. A pause after
// failures raises the alerts' paused event; one after max_runs is the end
// the job was given, and raises nothing.
func (s *state) pauseItself(it jobItem, next *pb.JobStatus, note string, e entry) {
	spec := proto.Clone(it.job.GetSpec()).(*pb.JobSpec)
	spec.Paused, spec.PauseNote = true, note
	j := s.systemChange(it, spec, next, e, AuditPause)
	if next.GetPause().GetReason() == PauseAfterFailures {
		s.alertPaused(jobItem{name: it.name, job: j, status: next}, PauseAfterFailures+": "+note, e)
	}
}

// systemChange stores the job of it with spec and status st, changed by
// the cluster itself (PrincipalSystem), and records it in the audit trail
// as action. It returns the stored job.
func (s *state) systemChange(it jobItem, spec *pb.JobSpec, st *pb.JobStatus, e entry, action string) *pb.Job {
	j := s.changedJob(it.job, spec, e)
	if s.atLeast(version2) {
		j.UpdatedBy = PrincipalSystem
	}
	s.setJob(j, st)
	if s.audit.on() {
		s.appendRecord(e, &pb.AuditRecord{
			Principal:     PrincipalSystem,
			Action:        action,
			Job:           it.name,
			VersionBefore: it.job.GetVersion(),
			VersionAfter:  j.GetVersion(),
		}, it.job.GetSpec(), spec)
	}
	return j
}

// countOutcome counts a finished run of the job of it in its fresh status
// next (pause_after_failures): a success starts the count of failures in
// a row again, a failure adds one. It reports the note to pause the job
// with once the count reaches the job's limit, having set next's pause
// reason; "" otherwise. FENCED (a newer attempt exists), UNKNOWN and
// CANCELLED say nothing about the job and leave the count.
func countOutcome(spec *pb.JobSpec, next *pb.JobStatus, r *pb.Run) (note string) {
	switch r.GetState() {
	case pb.RunState_RUN_STATE_SUCCEEDED:
		next.FailuresInARow = 0
		return ""
	case pb.RunState_RUN_STATE_FAILED, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED:
		next.FailuresInARow++
	default:
		return ""
	}
	limit := spec.GetPauseAfterFailures()
	if limit == 0 || next.FailuresInARow < limit || spec.GetPaused() {
		return ""
	}
	next.Pause = &pb.PauseState{Reason: PauseAfterFailures, RunId: r.GetId()}
	return fmt.Sprintf("paused after %d failed runs in a row; the last: %s", next.FailuresInARow, r.GetId())
}

// countFired counts a fired slot of the schedule in the job's fresh
// status next (max_runs), and reports whether it was the last one the job
// may fire, having set next's pause reason.
func countFired(spec *pb.JobSpec, next *pb.JobStatus) (last bool) {
	next.SlotsFired++
	limit := uint64(spec.GetMaxRuns())
	if limit == 0 || next.SlotsFired < limit || spec.GetPaused() {
		return false
	}
	next.Pause = &pb.PauseState{Reason: PauseMaxRuns}
	return true
}

// unixText is a time of a message: RFC 3339, UTC.
func unixText(sec int64) string {
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}
