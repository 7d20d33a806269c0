package fsm

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/alert/event"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Bounds of the leader's alert commands.
const (
	maxAlertChecks     = 2000
	maxDeliveryRecords = 2000
	// maxAttemptsKept is how many delivery attempts an alert keeps.
	maxAttemptsKept = 5
	maxAnswer       = 512
)

// checkAlerts judges the leader's checks by the entry's time (the leader's
// clock, stamped when it proposed them) and the committed state: a check
// that does not hold changes nothing, and one that holds raises its alert
// once (late once per slot, too_long once per run, no_success and paged
// channels once per episode, each reminder once per repeat). So a check
// proposed twice, by one leader or by the next, raises nothing twice.
// Like a FireBatch, the command is refused whole if it was committed in
// another term than its leader proposed it in.
func checkAlerts(s *state, c *pb.Command, e entry) (outcome, error) {
	ca := c.GetCheckAlerts()
	if len(ca.GetChecks()) > maxAlertChecks {
		return outcome{}, malformed("check_alerts: at most %d checks, got %d", maxAlertChecks, len(ca.GetChecks()))
	}
	if e.term != 0 && ca.GetTerm() != e.term {
		return outcome{}, nil
	}
	s.setAlertLimit(ca.GetHistoryLimit())
	first := s.alerts.seq
	for _, ck := range ca.GetChecks() {
		s.check(ck, e)
	}
	var raised []*pb.Alert
	s.alerts.alerts.AscendGreaterOrEqual(&pb.Alert{Seq: first + 1}, func(a *pb.Alert) bool {
		raised = append(raised, proto.CloneOf(a))
		return true
	})
	return outcome{changed: s.tx.isDirty(), alerts: raised}, nil
}

func (s *state) check(ck *pb.AlertCheck, e entry) {
	it, ok := s.item(ck.GetJob())
	if !ok {
		s.alerts.ix.forgetDeadline(ck.GetRunId())
		return
	}
	switch ck.GetEvent() {
	case event.Late:
		s.checkLate(it, ck.GetSlotUnix(), e)
	case event.TooLong:
		s.checkTooLong(it, ck.GetRunId(), e)
	case event.NoSuccess:
		s.checkNoSuccess(it, e)
	case "":
		if ep, ok := s.alerts.episodes.Get(&pb.AlertEpisode{Job: it.name, Event: episodeEvent(s, ck)}); ok && ep.GetId() == ck.GetEpisode() {
			s.remind(it, ep, ck.GetChannel(), e)
		}
	}
}

// episodeEvent finds the event of the episode a reminder check names.
func episodeEvent(s *state, ck *pb.AlertCheck) string {
	ev := ""
	s.alerts.episodes.AscendGreaterOrEqual(&pb.AlertEpisode{Job: ck.GetJob()}, func(ep *pb.AlertEpisode) bool {
		if ep.GetJob() != ck.GetJob() {
			return false
		}
		if ep.GetId() == ck.GetEpisode() {
			ev = ep.GetEvent()
			return false
		}
		return true
	})
	return ev
}

// checkLate: the slot has no dispatch (the cursor is before it) although
// slot + start_within has passed, and it was not judged late already. A
// paused job's slots are missed, not late; so are a check-in job's, whose
// start_within is the grace of a ping.
func (s *state) checkLate(it jobItem, slot int64, e entry) {
	st, spec := it.status, it.job.GetSpec()
	sw := spec.GetExpect().GetStartWithin()
	switch {
	case sw == nil, spec.GetPaused(), spec.GetCheckin() != nil, slot <= st.GetCursorUnix(), slot <= st.GetLateSlotUnix(),
		e.proposedAt <= addSaturating(slot*int64(time.Second), sw.AsDuration()):
		return
	}
	next := copyStatus(st)
	next.LateSlotUnix = slot
	s.setStatus(it, next)
	it.status = next
	s.raise(it, happening{name: event.Late, slot: slot,
		reason: "no attempt dispatched by slot + expect.start_within (" + sw.AsDuration().String() + ")"}, e)
}

// checkTooLong: the run is open, the job's, and its max_duration is over.
// A run is judged once (judged_too_long); one whose deadline moved with
// its job's spec is filed under the new one.
func (s *state) checkTooLong(it jobItem, id string, e entry) {
	r, ok := s.run(id)
	if !ok || !isOpen(r.GetState()) || r.GetJudgedTooLong() || r.GetJob() != it.name {
		s.alerts.ix.forgetDeadline(id)
		return
	}
	if _, owned := s.owner(r); !owned {
		s.alerts.ix.forgetDeadline(id)
		return
	}
	d := maxDuration(it.job.GetSpec())
	if d == 0 {
		s.alerts.ix.forgetDeadline(id)
		return
	}
	due := addSaturating(r.GetCreatedAtUnixNano(), time.Duration(d))
	if e.proposedAt < due {
		s.alerts.ix.setDeadline(id, due)
		return
	}
	nr := copyRun(r)
	nr.JudgedTooLong = true
	s.putRun(nr)
	s.alerts.ix.forgetDeadline(id)
	s.raise(it, happening{name: event.TooLong, run: nr, slot: nr.GetSlotUnix(), token: tokenOf(nr),
		reason: "still running at start + expect.max_duration (" + time.Duration(d).String() + ")"}, e)
}

// checkNoSuccess: no run succeeded for success_within since the last
// success or the job's last change, whichever is later, and the job is
// not paused.
func (s *state) checkNoSuccess(it jobItem, e entry) {
	spec := it.job.GetSpec()
	within := spec.GetExpect().GetSuccessWithin()
	if within == nil || spec.GetPaused() {
		return
	}
	if e.proposedAt < NoSuccessDue(it.job, it.status) {
		return
	}
	s.raise(it, happening{name: event.NoSuccess, failures: it.status.GetConsecutiveFailures(),
		reason: "no successful run for expect.success_within (" + within.AsDuration().String() + ")"}, e)
}

// NoSuccessDue is when a job without a success since is no_success: its
// last success or last change (updated_at), whichever is later, plus
// expect.success_within; 0 if it expects none.
func NoSuccessDue(j *pb.Job, st *pb.JobStatus) int64 {
	within := j.GetSpec().GetExpect().GetSuccessWithin()
	if within == nil {
		return 0
	}
	base := max(st.GetLastSuccessUnixNano(), j.GetUpdatedAt().AsTime().UnixNano())
	return addSaturating(base, within.AsDuration())
}

// recordDeliveries records delivery attempts. An attempt for an alert
// that is gone (pruned) or no longer pending changes nothing: the first
// acknowledgement wins, and a late report of an older attempt is no news.
func recordDeliveries(s *state, c *pb.Command, _ entry) (outcome, error) {
	rd := c.GetRecordDeliveries()
	if len(rd.GetRecords()) > maxDeliveryRecords {
		return outcome{}, malformed("record_deliveries: at most %d records, got %d", maxDeliveryRecords, len(rd.GetRecords()))
	}
	s.setAlertLimit(rd.GetHistoryLimit())
	for _, rec := range rd.GetRecords() {
		seq, ok := s.alerts.ix.byID[rec.GetAlertId()]
		if !ok || rec.GetAttempt() == nil {
			continue
		}
		a, _ := s.alerts.alerts.Get(&pb.Alert{Seq: seq})
		if a.GetDelivery() != pb.DeliveryState_DELIVERY_STATE_PENDING {
			continue
		}
		att := proto.CloneOf(rec.GetAttempt())
		att.Answer = truncateString(att.GetAnswer(), maxAnswer)
		next := proto.CloneOf(a)
		next.AttemptCount++
		att.Number = next.AttemptCount
		next.Attempts = append(next.Attempts, att)
		if n := len(next.Attempts); n > maxAttemptsKept {
			next.Attempts = next.Attempts[n-maxAttemptsKept:]
		}
		switch {
		case att.GetOk():
			next.Delivery = pb.DeliveryState_DELIVERY_STATE_DELIVERED
		case att.GetFinal():
			next.Delivery = pb.DeliveryState_DELIVERY_STATE_FAILED
		}
		s.putAlert(next)
	}
	return outcome{changed: s.tx.isDirty()}, nil
}
