package fsm

import (
	"time"

	"github.com/google/btree"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// alertIndex is derived from the alert section and the runs, and rebuilt
// by Restore: only Apply and Restore change it, under the write lock.
type alertIndex struct {
	// byID finds an alert's seq by its id (record_deliveries names ids).
	byID map[string]uint64
	// pending holds the seqs of the alerts not yet delivered nor given up:
	// what a new leader sends.
	pending *btree.BTreeG[uint64]
	// deadlines are the open runs of jobs with an expect.max_duration that
	// were not judged too_long yet, by when they will be (run created_at +
	// max_duration), for the leader's checks; deadlineOf finds a run's.
	deadlines  *btree.BTreeG[runDeadline]
	deadlineOf map[string]int64
}

type runDeadline struct {
	at  int64
	run string
}

func deadlineLess(a, b runDeadline) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.run < b.run
}

func newAlertIndex() *alertIndex {
	return &alertIndex{
		byID:       map[string]uint64{},
		pending:    btree.NewOrderedG[uint64](treeDegree),
		deadlines:  btree.NewG(treeDegree, deadlineLess),
		deadlineOf: map[string]int64{},
	}
}

func (x *alertIndex) setDeadline(run string, at int64) {
	x.forgetDeadline(run)
	x.deadlines.ReplaceOrInsert(runDeadline{at: at, run: run})
	x.deadlineOf[run] = at
}

func (x *alertIndex) forgetDeadline(run string) {
	if len(x.deadlineOf) == 0 {
		return
	}
	if at, ok := x.deadlineOf[run]; ok {
		x.deadlines.Delete(runDeadline{at: at, run: run})
		delete(x.deadlineOf, run)
	}
}

// maxDuration is a stored spec's expect.max_duration in ns, 0 for none.
func maxDuration(spec *pb.JobSpec) int64 {
	if d := spec.GetExpect().GetMaxDuration(); d != nil {
		return d.AsDuration().Nanoseconds()
	}
	return 0
}

// trackDuration gives the open run r of a job of spec its too_long
// deadline, if the job expects a maximum and r was not judged yet.
func (x *alertIndex) trackDuration(spec *pb.JobSpec, r *pb.Run) {
	if d := maxDuration(spec); d > 0 && !r.GetJudgedTooLong() {
		x.setDeadline(r.GetId(), addSaturating(r.GetCreatedAtUnixNano(), time.Duration(d)))
	}
}

// putAlert stores a (fresh) alert, keeps the index in step and prunes the
// history to its limit.
func (s *state) putAlert(a *pb.Alert) {
	s.alerts.alerts.ReplaceOrInsert(a)
	x := s.alerts.ix
	x.byID[a.GetId()] = a.GetSeq()
	if a.GetDelivery() == pb.DeliveryState_DELIVERY_STATE_PENDING {
		x.pending.ReplaceOrInsert(a.GetSeq())
	} else {
		x.pending.Delete(a.GetSeq())
	}
	s.tx.alertChanged()
	s.pruneAlerts()
}

// pruneAlerts drops the oldest alerts beyond the limit, delivered or not:
// the history is bounded whatever the receivers do.
func (s *state) pruneAlerts() {
	limit := s.alerts.historyLimit()
	for s.alerts.alerts.Len() > limit {
		a, _ := s.alerts.alerts.DeleteMin()
		delete(s.alerts.ix.byID, a.GetId())
		s.alerts.ix.pending.Delete(a.GetSeq())
	}
}

func (s *state) putEpisode(ep *pb.AlertEpisode) {
	s.alerts.episodes.ReplaceOrInsert(ep)
	s.tx.alertChanged()
}

func (s *state) deleteEpisode(ep *pb.AlertEpisode) {
	s.alerts.episodes.Delete(ep)
	s.tx.alertChanged()
}

// rebuildAlertIndex derives the index, for Restore: the jobs, runs and
// alerts are in place.
func (s *state) rebuildAlertIndex() {
	x := newAlertIndex()
	s.alerts.alerts.Ascend(func(a *pb.Alert) bool {
		x.byID[a.GetId()] = a.GetSeq()
		if a.GetDelivery() == pb.DeliveryState_DELIVERY_STATE_PENDING {
			x.pending.ReplaceOrInsert(a.GetSeq())
		}
		return true
	})
	s.ix.open.Ascend(func(k openKey) bool {
		r, ok := s.run(k.id)
		if !ok {
			return true
		}
		if it, owned := s.owner(r); owned {
			x.trackDuration(it.job.GetSpec(), r)
		}
		return true
	})
	s.alerts.ix = x
}
