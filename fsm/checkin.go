package fsm

import (
	"strconv"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Check-ins (command version 3). A check-in job runs elsewhere and pings;
// each ping is a run of kind CHECKIN with its own token, never dispatched.
// The leader matches a ping to a slot at its own clock (package checkin),
// and this handler decides by the entry's time: the slot holds while the
// ping is within the job's grace of it, early or late. The rules that
// touch other kinds for check-in jobs (a slot without a ping by its grace,
// a run open past its deadline, a delete or a new target) live with those
// kinds and look at check-in jobs only, which exist from cluster version 3
// on (the API registers none before).

// ReasonNoCheckin: a check-in job's slot that got no ping by its grace.
const ReasonNoCheckin = "no_checkin"

// ReasonCheckinJob: a fire of a check-in job, which fires nothing.
const ReasonCheckinJob = "checkin_job"

func checkin(s *state, c *pb.Command, e entry) (outcome, error) {
	ci := c.GetCheckin()
	if err := checkCheckin(ci); err != nil {
		return outcome{}, err
	}
	it, ok := s.item(ci.GetJob())
	if !ok {
		return outcome{}, fail(ErrNotFound, "job %q not found", ci.GetJob())
	}
	if it.job.GetSpec().GetCheckin() == nil {
		return outcome{}, fail(ErrInvalid, "job %q is not a check-in job: it has a target, and raftcron runs it", it.name)
	}
	if r := s.checkedIn(it, ci.GetRequestId()); r != nil {
		return outcome{run: r}, nil // a retried ping: the first one's run
	}
	if ci.GetStatus() != pb.CheckinStatus_CHECKIN_STATUS_START {
		r, err := s.runToClose(it, ci.GetRunId())
		if err != nil {
			return outcome{}, err
		}
		if r != nil {
			return s.closeCheckin(it, r, ci, e), nil
		}
	} else if limit := ci.GetMaxOpenRuns(); limit > 0 && len(it.status.GetOpenRunIds()) >= int(limit) {
		return outcome{}, fail(ErrLimitExceeded, "job %q has %d check-in runs open, its limit (max_open_runs): "+
			"finish them, or set a deadline so that a run whose process died is closed", it.name, limit)
	}
	slot, err := s.checkinSlot(it, ci, e)
	if err != nil {
		return outcome{}, err
	}
	it, _ = s.item(it.name) // the misses moved its status
	return s.openCheckin(it, ci, slot, e), nil
}

// isCheckin reports whether r is a ping's run: nothing executes it here.
func isCheckin(r *pb.Run) bool { return r.GetKind() == pb.FireKind_FIRE_KIND_CHECKIN }

// checkCheckin refuses what no leader proposes.
func checkCheckin(ci *pb.CheckinCommand) error {
	switch {
	case ci.GetJob() == "":
		return malformed("checkin.job must not be empty")
	case ci.GetStatus() < pb.CheckinStatus_CHECKIN_STATUS_START || ci.GetStatus() > pb.CheckinStatus_CHECKIN_STATUS_FAIL:
		return malformed("checkin.status must be START, SUCCESS or FAIL, not %v", ci.GetStatus())
	case ci.GetStatus() == pb.CheckinStatus_CHECKIN_STATUS_START && ci.GetRunId() != "":
		return malformed("checkin.run_id is for success and fail")
	case ci.GetMissedCount() > 0 && (ci.GetSlotUnix() == 0 || ci.GetMissedFromUnix() > ci.GetMissedToUnix() ||
		ci.GetMissedToUnix() >= ci.GetSlotUnix() || ci.GetMissedFromUnix() <= ci.GetCursorUnix()):
		return malformed("checkin.missed must lie between the cursor and the slot")
	case ci.GetSlotUnix() != 0 && ci.GetSlotUnix() <= ci.GetCursorUnix():
		return malformed("checkin.slot_unix must come after the cursor")
	}
	return nil
}

// checkedIn finds the job's check-in run that a ping with requestID opened
// or closed.
func (s *state) checkedIn(it jobItem, requestID string) *pb.Run {
	if requestID == "" {
		return nil
	}
	var found *pb.Run
	s.runsOf(it.name, func(r *pb.Run) bool {
		if isCheckin(r) && owns(it, r) &&
			(r.GetRequestId() == requestID || r.GetCloseRequestId() == requestID) {
			found = r
		}
		return found == nil
	})
	return found
}

// runToClose is the open check-in run a success or fail closes: the one
// named, or else the job's newest; nil when none is open (the ping opens
// and closes one).
func (s *state) runToClose(it jobItem, id string) (*pb.Run, error) {
	if id == "" {
		open := it.status.GetOpenRunIds()
		for i := len(open) - 1; i >= 0; i-- {
			if r, ok := s.run(open[i]); ok && isCheckin(r) {
				return r, nil
			}
		}
		return nil, nil
	}
	r, ok := s.run(id)
	if !ok || !isCheckin(r) || !owns(it, r) {
		return nil, fail(ErrNotFound, "run %q is not a check-in run of job %q", id, it.name)
	}
	if !isOpen(r.GetState()) {
		return nil, fail(ErrRunFinished, "run %q is finished already (%s%s): the ping changes nothing",
			id, stateName(r.GetState()), reasonSuffix(r.GetReason()))
	}
	return r, nil
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ", " + reason
}

// checkinSlot decides the ping's slot by the entry's time, and records the
// slots it leaves missed; 0 is off schedule. The match holds only for the
// generation and cursor it was made from.
func (s *state) checkinSlot(it jobItem, ci *pb.CheckinCommand, e entry) (int64, error) {
	slot := ci.GetSlotUnix()
	if slot == 0 {
		return 0, nil
	}
	if ci.GetGeneration() != it.job.GetGeneration() || ci.GetCursorUnix() != it.status.GetCursorUnix() {
		return 0, fail(ErrVersionMismatch, "job %q moved on since the ping was matched (generation %d, cursor %d; "+
			"now %d, %d): match it again", it.name, ci.GetGeneration(), ci.GetCursorUnix(),
			it.job.GetGeneration(), it.status.GetCursorUnix())
	}
	spec := it.job.GetSpec()
	if gate(spec, slot) != "" || !withinGrace(e.proposedAt, slot, spec) {
		return 0, nil
	}
	next := copyStatus(it.status)
	next.CursorUnix = slot
	if n := ci.GetMissedCount(); n > 0 {
		r := &pb.Run{
			Id:  s.newRunID(missedRunID(it.name, e.index, 0)),
			Job: it.name, Generation: it.job.GetGeneration(),
			SlotUnix: ci.GetMissedFromUnix(), LastSlotUnix: ci.GetMissedToUnix(), MissedCount: n,
			Kind: pb.FireKind_FIRE_KIND_SCHEDULED, State: pb.RunState_RUN_STATE_MISSED, Reason: ReasonNoCheckin,
			CreatedAtUnixNano: e.proposedAt, FinishedAtUnixNano: e.proposedAt,
		}
		s.noteFinished(next, r)
		s.putRun(r)
	}
	s.setStatus(it, next)
	return slot, nil
}

// withinGrace reports whether a ping at atNano is within the job's grace
// of the slot, before or after it (the package checkin's early tolerance
// is never more than the grace).
func withinGrace(atNano, slot int64, spec *pb.JobSpec) bool {
	at := time.Unix(0, atNano)
	s := time.Unix(slot, 0)
	grace := spec.GetExpect().GetStartWithin().AsDuration()
	return !at.Before(s.Add(-grace)) && !at.After(s.Add(grace))
}

// graceOver reports whether the grace of every slot up to slot has passed
// at atNano: their pings can no longer come.
func graceOver(atNano, slot int64, spec *pb.JobSpec) bool {
	return time.Unix(0, atNano).After(time.Unix(slot, 0).Add(spec.GetExpect().GetStartWithin().AsDuration()))
}

// openCheckin records a new check-in run under a new token: open for a
// start, finished at once for a success or fail that found no run open.
func (s *state) openCheckin(it jobItem, ci *pb.CheckinCommand, slot int64, e entry) outcome {
	token := s.nextToken()
	a := &pb.Attempt{
		Number: 1, Token: token, Kind: pb.FireKind_FIRE_KIND_CHECKIN, Term: e.term,
		DispatchedAtUnixNano: e.proposedAt, StartedAtUnixNano: e.proposedAt,
		State: pb.RunState_RUN_STATE_DISPATCHED, PingedBy: e.principal,
	}
	r := &pb.Run{
		Id:  s.newRunID(firedRunID(it.name, token)),
		Job: it.name, Generation: it.job.GetGeneration(), SlotUnix: slot,
		Kind: pb.FireKind_FIRE_KIND_CHECKIN, State: pb.RunState_RUN_STATE_DISPATCHED,
		CreatedAtUnixNano: e.proposedAt, RequestId: ci.GetRequestId(), Attempts: []*pb.Attempt{a},
	}
	if slot == 0 {
		r.SlotUnix, r.OffSchedule = e.seconds(), true
	}
	next := copyStatus(it.status)
	next.LatestToken = token
	started := ci.GetStatus() == pb.CheckinStatus_CHECKIN_STATUS_START
	if started {
		next.OpenRunIds = appendID(next.OpenRunIds, r.GetId())
	} else {
		r = finishedCheckin(r, ci, e)
		r.CloseRequestId = ""
		s.noteFinished(next, r)
	}
	s.setStatus(it, next)
	s.putRun(r)
	if started {
		// Its start is the ping: never late, but too_long from it on.
		s.alerts.ix.trackDuration(it.job.GetSpec(), r)
	}
	return outcome{changed: true, run: r}
}

// closeCheckin finishes the open check-in run r as the ping says.
func (s *state) closeCheckin(it jobItem, r *pb.Run, ci *pb.CheckinCommand, e entry) outcome {
	nr := finishedCheckin(r, ci, e)
	next := copyStatus(it.status)
	next.OpenRunIds = removeID(next.OpenRunIds, nr.GetId())
	s.noteFinished(next, nr)
	s.setStatus(it, next)
	s.putRun(nr)
	return outcome{changed: true, run: nr}
}

// finishedCheckin is r finished by the success or fail ping ci.
func finishedCheckin(r *pb.Run, ci *pb.CheckinCommand, e entry) *pb.Run {
	st := pb.RunState_RUN_STATE_SUCCEEDED
	if ci.GetStatus() == pb.CheckinStatus_CHECKIN_STATUS_FAIL {
		st = pb.RunState_RUN_STATE_FAILED
	}
	a := copyAttempt(CurrentAttempt(r))
	a.State = st
	a.FinishedAtUnixNano = e.proposedAt
	a.Output = truncateBytes(ci.GetOutput(), maxOutput)
	if ci.ExitCode != nil {
		code := ci.GetExitCode()
		a.ExitCode = &code
		a.Detail = "exit status " + strconv.Itoa(int(code))
	}
	nr := copyRun(r)
	nr.Attempts = replaceLast(r.GetAttempts(), a)
	nr.State = st
	nr.FinishedAtUnixNano = e.proposedAt
	nr.CloseRequestId = ci.GetRequestId()
	return nr
}

// checkinExpired reports whether the completion c of the open check-in
// run r is the one outcome the leader may report of it: deadline exceeded,
// once the job's deadline has passed since the run opened, by the entry's
// time. Its pings close it otherwise.
func (s *state) checkinExpired(r *pb.Run, c *pb.Completion, e entry) bool {
	it, ok := s.owner(r)
	deadline := it.job.GetSpec().GetDeadline().AsDuration()
	if !ok || c.GetOutcome() != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED || deadline <= 0 {
		return false
	}
	return !time.Unix(0, e.proposedAt).Before(time.Unix(0, r.GetCreatedAtUnixNano()).Add(deadline))
}
