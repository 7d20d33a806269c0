package fsm_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	ciStart     = pb.CheckinStatus_CHECKIN_STATUS_START
	ciSuccess   = pb.CheckinStatus_CHECKIN_STATUS_SUCCESS
	ciFail      = pb.CheckinStatus_CHECKIN_STATUS_FAIL
	kindCheckin = pb.FireKind_FIRE_KIND_CHECKIN
	ciGrace     = 10 * time.Second
)

// checkinSpec is a check-in job due every minute, with a grace of 10 s.
func checkinSpec(name string) *pb.JobSpec {
	return &pb.JobSpec{
		Name: name, Schedule: "* * * * *", Timezone: "UTC", Checkin: &pb.CheckinTarget{},
		Expect: &pb.Expect{StartWithin: durationpb.New(ciGrace)}, HistoryLimit: 10,
		Labels: map[string]string{"team": "ops"},
	}
}

// applyAt applies c stamped at exactly at.
func (h *harness) applyAt(c *pb.Command, at time.Time) *pb.CommandResult {
	h.t.Helper()
	h.now = at.Add(-time.Second)
	return h.apply(c)
}

// ping is a check-in of job matched to slot (0: none) from the job's
// generation and cursor as they stand.
func (h *harness) ping(job string, status pb.CheckinStatus, slot int64) *pb.CheckinCommand {
	h.t.Helper()
	j := h.job(job)
	return &pb.CheckinCommand{
		Job: job, Generation: j.GetGeneration(), CursorUnix: j.GetStatus().GetCursorUnix(),
		Status: status, SlotUnix: slot,
	}
}

func checkinCmd(ci *pb.CheckinCommand) *pb.Command {
	return &pb.Command{Kind: &pb.Command_Checkin{Checkin: ci}}
}

// checkedIn applies ci at at and returns the run it answered.
func (h *harness) checkedIn(ci *pb.CheckinCommand, at time.Time) *pb.Run {
	h.t.Helper()
	r := h.applyAt(checkinCmd(ci), at)
	if r.GetCode() != pb.ResultCode_RESULT_CODE_OK || r.GetRun() == nil {
		h.t.Fatalf("check-in %v at %s: %v (%s), want OK with a run", ci, at, r.GetCode(), r.GetMessage())
	}
	return r.GetRun()
}

// firstSlot creates a check-in job and returns its first slot: the next
// whole minute after its creation.
func (h *harness) firstSlot(spec *pb.JobSpec) int64 {
	h.t.Helper()
	h.create(spec)
	return (h.status(spec.GetName()).GetCursorUnix()/60 + 1) * 60
}

func TestCheckinStartThenSuccess(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	counter := h.f.FencingToken()
	start := h.ping("nightly", ciStart, slot)
	start.RequestId = "r-start"
	open := h.checkedIn(start, time.Unix(slot, 0).Add(300*time.Millisecond))
	a := fsm.CurrentAttempt(open)
	if open.GetState() != stDispatched || open.GetKind() != kindCheckin || open.GetSlotUnix() != slot || open.GetOffSchedule() ||
		a.GetToken() != counter+1 || a.GetKind() != kindCheckin || a.GetState() != stDispatched || a.GetPingedBy() != "" {
		t.Fatalf("start opened %v, want a DISPATCHED check-in run of slot %d with token %d", open, slot, counter+1)
	}
	st := h.status("nightly")
	if st.GetCursorUnix() != slot || len(st.GetOpenRunIds()) != 1 || st.GetLatestToken() != counter+1 {
		t.Fatalf("status after start: %v", st)
	}
	end := h.ping("nightly", ciSuccess, 0)
	end.RunId, end.RequestId, end.Output = open.GetId(), "r-end", []byte("done")
	finishedAt := time.Unix(slot, 0).Add(42 * time.Second)
	closed := h.checkedIn(end, finishedAt)
	a = fsm.CurrentAttempt(closed)
	if closed.GetId() != open.GetId() || closed.GetState() != stSucceeded || closed.GetFinishedAtUnixNano() != finishedAt.UnixNano() ||
		a.GetState() != stSucceeded || a.GetFinishedAtUnixNano() != finishedAt.UnixNano() || string(a.GetOutput()) != "done" ||
		closed.GetCloseRequestId() != "r-end" || h.f.FencingToken() != counter+1 {
		t.Fatalf("success closed %v, want the run SUCCEEDED at %s, its token the only one issued", closed, finishedAt)
	}
	if st := h.status("nightly"); len(st.GetOpenRunIds()) != 0 || st.GetSucceeded() != 1 || st.GetLastRunId() != open.GetId() {
		t.Fatalf("status after success: %v", st)
	}
}

func TestCheckinSuccessAloneOpensAndClosesARun(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	at := time.Unix(slot, 0).Add(2 * time.Second)
	r := h.checkedIn(h.ping("nightly", ciSuccess, slot), at)
	if r.GetState() != stSucceeded || r.GetSlotUnix() != slot || len(r.GetAttempts()) != 1 ||
		fsm.CurrentAttempt(r).GetToken() != h.f.FencingToken() || r.GetFinishedAtUnixNano() != at.UnixNano() {
		t.Fatalf("success alone: %v, want a SUCCEEDED run of slot %d with its own token", r, slot)
	}
	if st := h.status("nightly"); st.GetCursorUnix() != slot || len(st.GetOpenRunIds()) != 0 || st.GetSucceeded() != 1 {
		t.Fatalf("status: %v", st)
	}
}

func TestCheckinFailRecordsTheExitCode(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	ping := h.ping("nightly", ciFail, slot)
	code := int32(3)
	ping.ExitCode, ping.Output = &code, []byte("disk full\n")
	r := h.checkedIn(ping, time.Unix(slot, 0))
	a := fsm.CurrentAttempt(r)
	if r.GetState() != stFailed || a.GetState() != stFailed || a.ExitCode == nil || a.GetExitCode() != 3 ||
		a.GetDetail() != "exit status 3" || string(a.GetOutput()) != "disk full\n" {
		t.Fatalf("fail: %v, want FAILED with exit code 3", r)
	}
	if st := h.status("nightly"); st.GetFailed() != 1 || st.GetLastOutcome() != stFailed {
		t.Fatalf("status: %v", st)
	}
}

// TestCheckinGraceByTheEntrysTime: the slot holds while the entry's time is
// within the grace of it, early or late; outside, the ping is a run of its
// own off schedule and the slot is left alone.
func TestCheckinGraceByTheEntrysTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Duration // from the slot
		hold bool
	}{
		{"on time", 0, true},
		{"a few seconds early", -3 * time.Second, true},
		{"early by the grace", -ciGrace, true},
		{"early beyond the grace", -ciGrace - time.Nanosecond, false},
		{"late by the grace", ciGrace, true},
		{"a nanosecond late", ciGrace + time.Nanosecond, false},
		{"one second late", ciGrace + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			slot := h.firstSlot(checkinSpec("nightly"))
			cursor := h.status("nightly").GetCursorUnix()
			at := time.Unix(slot, 0).Add(tc.at)
			r := h.checkedIn(h.ping("nightly", ciStart, slot), at)
			switch {
			case tc.hold && (r.GetSlotUnix() != slot || r.GetOffSchedule() || h.status("nightly").GetCursorUnix() != slot):
				t.Fatalf("at slot%+v: %v, want the slot", tc.at, r)
			case !tc.hold && (r.GetSlotUnix() != at.Unix() || !r.GetOffSchedule() || h.status("nightly").GetCursorUnix() != cursor):
				t.Fatalf("at slot%+v: %v, want off schedule at %d, the cursor left at %d", tc.at, r, at.Unix(), cursor)
			}
			if r.GetState() != stDispatched || fsm.CurrentAttempt(r).GetToken() == 0 {
				t.Fatalf("at slot%+v: %v, want an open run with a token either way", tc.at, r)
			}
		})
	}
}

// TestCheckinMissedByTheEntrysTime: the leader's miss of a slot without a
// ping counts only once the grace has passed by its entry's time; a check-in
// one second late finds the slot missed and is off schedule.
func TestCheckinMissedByTheEntrysTime(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	gen := h.job("nightly").GetGeneration()
	miss := func(at time.Time) {
		h.applyAt(fireBatchCmd(leaderID, leaderTerm, nil, []*pb.Miss{{
			Job: "nightly", Generation: gen, FromSlotUnix: slot, ToSlotUnix: slot, Count: 1, Reason: fsm.ReasonNoCheckin,
		}}), at)
	}
	cursor := h.status("nightly").GetCursorUnix()
	miss(time.Unix(slot, 0).Add(ciGrace))
	if st := h.status("nightly"); st.GetCursorUnix() != cursor || st.GetMissed() != 0 {
		t.Fatalf("a miss at the end of the grace was recorded: %v", st)
	}
	late := h.ping("nightly", ciStart, slot)
	miss(time.Unix(slot, 0).Add(ciGrace + time.Nanosecond))
	st := h.status("nightly")
	if st.GetCursorUnix() != slot || st.GetMissed() != 1 || st.GetLastOutcome() != stMissed {
		t.Fatalf("a miss past the grace was not recorded: %v", st)
	}
	if last := h.run(st.GetLastRunId()); last.GetReason() != fsm.ReasonNoCheckin || last.GetMissedCount() != 1 {
		t.Fatalf("missed record %v, want reason %s", last, fsm.ReasonNoCheckin)
	}
	// The ping matched before the miss committed: its match is stale.
	h.mustFail(checkinCmd(late), pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, fsm.ErrVersionMismatch)
	// Matched again, one second late: no slot.
	r := h.checkedIn(h.ping("nightly", ciStart, 0), time.Unix(slot, 0).Add(ciGrace+time.Second))
	if !r.GetOffSchedule() || h.status("nightly").GetCursorUnix() != slot {
		t.Fatalf("late ping: %v", r)
	}
}

// TestCheckinRecordsTheSlotsBeforeIt: a ping that takes a slot records the
// slots after the cursor before it missed, in the same entry.
func TestCheckinRecordsTheSlotsBeforeIt(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly")) + 120
	ping := h.ping("nightly", ciSuccess, slot)
	ping.MissedFromUnix, ping.MissedToUnix, ping.MissedCount = slot-120, slot-60, 2
	h.checkedIn(ping, time.Unix(slot, 0))
	st := h.status("nightly")
	if st.GetCursorUnix() != slot || st.GetMissed() != 2 || st.GetSucceeded() != 1 {
		t.Fatalf("status: %v, want 2 missed and 1 succeeded, cursor %d", st, slot)
	}
	var missed *pb.Run
	for _, r := range h.f.ListRuns("nightly", 0) {
		if r.GetState() == stMissed {
			missed = r
		}
	}
	if missed.GetReason() != fsm.ReasonNoCheckin || missed.GetSlotUnix() != slot-120 || missed.GetLastSlotUnix() != slot-60 {
		t.Fatalf("missed record %v", missed)
	}
	// A ping whose slot no longer holds records no misses either.
	next := h.ping("nightly", ciSuccess, slot+180)
	next.MissedFromUnix, next.MissedToUnix, next.MissedCount = slot+60, slot+120, 2
	h.checkedIn(next, time.Unix(slot+180, 0).Add(time.Minute))
	if st := h.status("nightly"); st.GetCursorUnix() != slot || st.GetMissed() != 2 {
		t.Fatalf("an off-schedule ping recorded misses: %v", st)
	}
}

// TestCheckinRunsLongerThanThePeriod: starts of slots in a row open a run
// each; a success names its run, one without a name closes the newest.
func TestCheckinRunsLongerThanThePeriod(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	first := h.checkedIn(h.ping("nightly", ciStart, slot), time.Unix(slot, 0))
	second := h.checkedIn(h.ping("nightly", ciStart, slot+60), time.Unix(slot+60, 0))
	if second.GetSlotUnix() != slot+60 || len(h.status("nightly").GetOpenRunIds()) != 2 {
		t.Fatalf("second start: %v, status %v", second, h.status("nightly"))
	}
	end := h.ping("nightly", ciSuccess, 0)
	end.RunId = first.GetId()
	if r := h.checkedIn(end, time.Unix(slot+90, 0)); r.GetId() != first.GetId() || r.GetState() != stSucceeded {
		t.Fatalf("success of the first: %v", r)
	}
	if r := h.checkedIn(h.ping("nightly", ciSuccess, 0), time.Unix(slot+150, 0)); r.GetId() != second.GetId() {
		t.Fatalf("a success without a run id closed %v, want the newest open run %s", r, second.GetId())
	}
}

func TestCheckinRetriedPingFindsItsRun(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	start := h.ping("nightly", ciStart, slot)
	start.RequestId = "r1"
	open := h.checkedIn(start, time.Unix(slot, 0))
	counter := h.f.FencingToken()
	if again := h.checkedIn(start, time.Unix(slot, 0).Add(time.Second)); again.GetId() != open.GetId() || h.f.FencingToken() != counter {
		t.Fatalf("retried start: %v, counter %d, want run %s and no new token", again, h.f.FencingToken(), open.GetId())
	}
	end := h.ping("nightly", ciSuccess, 0)
	end.RequestId = "r2"
	h.checkedIn(end, time.Unix(slot+5, 0))
	before := h.f.StateHash()
	if again := h.checkedIn(end, time.Unix(slot+6, 0)); again.GetId() != open.GetId() || h.f.StateHash() != before {
		t.Fatalf("retried success: %v, or the state changed; want run %s as it was", again, open.GetId())
	}
}

func TestCheckinRefusals(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	h.create(testSpec("webhook"))
	done := h.checkedIn(h.ping("nightly", ciSuccess, slot), time.Unix(slot, 0))
	closeRun := func(id string) *pb.Command {
		c := h.ping("nightly", ciFail, 0)
		c.RunId = id
		return checkinCmd(c)
	}
	h.mustFail(closeRun(done.GetId()), pb.ResultCode_RESULT_CODE_RUN_FINISHED, fsm.ErrRunFinished)
	h.mustFail(closeRun("nightly-404"), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	h.mustFail(checkinCmd(&pb.CheckinCommand{Job: "webhook", Status: ciStart}), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	h.mustFail(checkinCmd(&pb.CheckinCommand{Job: "gone", Status: ciStart}), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	for name, c := range map[string]*pb.CheckinCommand{
		"no job":               {Status: ciStart},
		"no status":            {Job: "nightly"},
		"a start naming a run": {Job: "nightly", Status: ciStart, RunId: done.GetId()},
		"a slot at the cursor": {Job: "nightly", Status: ciStart, CursorUnix: slot, SlotUnix: slot},
		"misses after the slot": {Job: "nightly", Status: ciStart, CursorUnix: slot, SlotUnix: slot + 60,
			MissedFromUnix: slot + 120, MissedToUnix: slot + 120, MissedCount: 1},
	} {
		t.Run(name, func(t *testing.T) {
			h.mustFail(checkinCmd(c), pb.ResultCode_RESULT_CODE_MALFORMED, fsm.ErrMalformed)
		})
	}
	// A token scoped elsewhere finds no such job.
	h.mustFail(as("ci", map[string]string{"team": "billing"}, checkinCmd(h.ping("nightly", ciStart, 0))),
		pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	r := h.mustOK(as("ci", map[string]string{"team": "ops"}, checkinCmd(h.ping("nightly", ciStart, 0))))
	if fsm.CurrentAttempt(r.GetRun()).GetPingedBy() != "ci" {
		t.Fatalf("run %v does not name who pinged", r.GetRun())
	}
}

func TestCheckinOpenRunsLimit(t *testing.T) {
	h := newHarness(t)
	h.firstSlot(checkinSpec("nightly"))
	start := func() *pb.Command {
		c := h.ping("nightly", ciStart, 0)
		c.MaxOpenRuns = 2
		return checkinCmd(c)
	}
	h.mustOK(start())
	h.mustOK(start())
	h.mustFail(start(), pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED, fsm.ErrLimitExceeded)
	// A success still closes one.
	h.mustOK(checkinCmd(h.ping("nightly", ciSuccess, 0)))
	h.mustOK(start())
}

// TestCheckinDeadline: the leader fails a check-in run still open at the
// job's deadline, by the entry's time; it reports nothing else of one.
func TestCheckinDeadline(t *testing.T) {
	h := newHarness(t)
	spec := checkinSpec("nightly")
	spec.Deadline = durationpb.New(time.Hour)
	slot := h.firstSlot(spec)
	open := h.checkedIn(h.ping("nightly", ciStart, slot), time.Unix(slot, 0))
	expire := func(st pb.RunState, at time.Time) *pb.CompletionResult {
		c := done(open, st, at)
		c.FinishedAtUnixNano, c.StartedAtUnixNano = 0, 0
		return h.applyAt(completeBatchCmd(c), at).GetCompletions()[0]
	}
	deadline := time.Unix(slot, 0).Add(time.Hour)
	if r := expire(stDeadline, deadline.Add(-time.Nanosecond)); r.GetAccepted() || r.GetReason() != fsm.ReasonNotDue {
		t.Fatalf("deadline before it passed: %v, want refused not_due", r)
	}
	if r := expire(stSucceeded, deadline); r.GetAccepted() || r.GetReason() != fsm.ReasonNotDue {
		t.Fatalf("a success reported by the leader: %v, want refused not_due", r)
	}
	r := expire(stDeadline, deadline)
	if !r.GetAccepted() || r.GetRun().GetState() != stDeadline || r.GetRun().GetFinishedAtUnixNano() != deadline.UnixNano() {
		t.Fatalf("deadline at it: %v, want the run DEADLINE_EXCEEDED then", r)
	}
	if st := h.status("nightly"); len(st.GetOpenRunIds()) != 0 || st.GetFailed() != 1 {
		t.Fatalf("status: %v", st)
	}
}

// TestCheckinJobFiresNothing: no fire of any kind is accepted for a
// check-in job or its runs.
func TestCheckinJobFiresNothing(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	gen := h.job("nightly").GetGeneration()
	h.refused(slotFire("nightly", gen, slot), fsm.ReasonCheckinJob)
	h.refused(ofGeneration(manualFire("nightly", "", true), gen), fsm.ReasonCheckinJob)
	open := h.checkedIn(h.ping("nightly", ciStart, slot), time.Unix(slot, 0))
	h.refused(ofGeneration(redispatchFire("nightly", open.GetId()), gen), fsm.ReasonNotOrphan)
	h.refused(ofGeneration(retryFire("nightly", open.GetId()), gen), fsm.ReasonNotOpen)
}

// TestCheckinRunsCloseWithTheirJob: a delete, or a new target, cancels the
// open check-in runs, which no ping could close any more.
func TestCheckinRunsCloseWithTheirJob(t *testing.T) {
	h := newHarness(t)
	slot := h.firstSlot(checkinSpec("nightly"))
	open := h.checkedIn(h.ping("nightly", ciStart, slot), time.Unix(slot, 0))
	spec := testSpec("nightly")
	h.mustOK(updateCmd(spec, 0))
	if r := h.run(open.GetId()); r.GetState() != stCancelled || r.GetReason() != fsm.ReasonGeneration {
		t.Fatalf("after a new target: %v, want CANCELLED generation", r)
	}
	if st := h.status("nightly"); len(st.GetOpenRunIds()) != 0 || h.job("nightly").GetGeneration() != 2 {
		t.Fatalf("status %v of generation %d", st, h.job("nightly").GetGeneration())
	}

	h.create(checkinSpec("other"))
	open = h.checkedIn(h.ping("other", ciStart, 0), h.now)
	h.mustOK(deleteCmd("other", 0))
	if r := h.run(open.GetId()); r.GetState() != stCancelled || r.GetReason() != fsm.ReasonDeleted {
		t.Fatalf("after the delete: %v, want CANCELLED deleted", r)
	}
	if snapshotHeader(t, h.f).GetTombstoneCount() != 0 {
		t.Fatal("the deleted job's tombstone stays: a run of it is still open")
	}
}

// TestCheckinRoleNeedsClusterVersion3: releases before it know no role
// checkin and refuse it as malformed, so below version 3 every node does.
func TestCheckinRoleNeedsClusterVersion3(t *testing.T) {
	tok := aclToken("backup-host", pb.AclRole_ACL_ROLE_CHECKIN, map[string]string{"team": "ops"})
	newHarnessAt(t, 2).mustFail(createTokenCmd(tok), pb.ResultCode_RESULT_CODE_MALFORMED, fsm.ErrMalformed)
	h := newHarness(t)
	h.mustOK(createTokenCmd(tok))
	if got, ok := h.f.ACLToken(secretHash("secret-backup-host")); !ok || got.GetRole() != pb.AclRole_ACL_ROLE_CHECKIN {
		t.Fatalf("token %v, want the checkin token stored", got)
	}
}
