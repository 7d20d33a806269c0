package fsm

import (
	"github.com/raftcron/raftcron/alert/event"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Channels returns the channels whose labels include selector, by name.
func (f *FSM) Channels(selector map[string]string) []*pb.Channel {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*pb.Channel
	f.st.alerts.channels.Ascend(func(it channelItem) bool {
		if SelectorMatches(it.channel.GetLabels(), selector) {
			out = append(out, proto.CloneOf(it.channel))
		}
		return true
	})
	return out
}

// Channel returns the channel name, or false.
func (f *FSM) Channel(name string) (*pb.Channel, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ch, ok := f.st.alerts.channel(name)
	if !ok {
		return nil, false
	}
	return proto.CloneOf(ch), true
}

// NotifyRules returns the notify rules whose selector includes selector,
// by name.
func (f *FSM) NotifyRules(selector map[string]string) []*pb.NotifyRule {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*pb.NotifyRule
	f.st.alerts.rules.Ascend(func(it ruleItem) bool {
		if SelectorMatches(it.rule.GetSelector(), selector) {
			out = append(out, proto.CloneOf(it.rule))
		}
		return true
	})
	return out
}

// NotifyRule returns the rule name, or false.
func (f *FSM) NotifyRule(name string) (*pb.NotifyRule, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.alerts.rule(name)
	if !ok {
		return nil, false
	}
	return proto.CloneOf(r), true
}

// AlertQuery selects alerts for Alerts.
type AlertQuery struct {
	// Job, if set, keeps that job's alerts only.
	Job string
	// Open keeps the alerts of episodes still open.
	Open bool
	// Selector keeps the alerts of jobs whose labels (when the alert was
	// raised) include it.
	Selector map[string]string
	// Limit caps the answer; 0 means no cap.
	Limit int
}

// Alerts returns the alerts q selects, newest first, and the open
// episodes of the job (every one without a job) in the selector's scope.
func (f *FSM) Alerts(q AlertQuery) ([]*pb.Alert, []*pb.AlertEpisode) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a := &f.st.alerts
	var eps []*pb.AlertEpisode
	open := map[string]bool{}
	a.episodes.Ascend(func(ep *pb.AlertEpisode) bool {
		if q.Job == "" || ep.GetJob() == q.Job {
			open[ep.GetId()] = true
			if it, ok := f.st.item(ep.GetJob()); ok && SpecHasLabels(it.job.GetSpec(), q.Selector) {
				eps = append(eps, proto.CloneOf(ep))
			}
		}
		return true
	})
	var out []*pb.Alert
	a.alerts.Descend(func(al *pb.Alert) bool {
		switch {
		case q.Job != "" && al.GetJob() != q.Job,
			q.Open && (!open[al.GetEpisode()] || al.GetEvent() == event.Recovered),
			!SelectorMatches(al.GetLabels(), q.Selector):
			return true
		}
		out = append(out, proto.CloneOf(al))
		return q.Limit == 0 || len(out) < q.Limit
	})
	return out, eps
}

// PendingAlerts returns the alerts not yet delivered nor given up, oldest
// first: what the leader sends. They are the stored values: callers only
// read them.
func (f *FSM) PendingAlerts() []*pb.Alert {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a := &f.st.alerts
	out := make([]*pb.Alert, 0, a.ix.pending.Len())
	a.ix.pending.Ascend(func(seq uint64) bool {
		if al, ok := a.alerts.Get(&pb.Alert{Seq: seq}); ok {
			out = append(out, al)
		}
		return true
	})
	return out
}

// OpenEpisodes returns every open episode, by (job, event): stored values,
// only read.
func (f *FSM) OpenEpisodes() []*pb.AlertEpisode {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*pb.AlertEpisode, 0, f.st.alerts.episodes.Len())
	f.st.alerts.episodes.Ascend(func(ep *pb.AlertEpisode) bool {
		out = append(out, ep)
		return true
	})
	return out
}

// AlertsOpen is how many episodes are open.
func (f *FSM) AlertsOpen() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.alerts.episodes.Len()
}

// AlertsActive reports whether any channel exists: without one no alert
// is ever raised, and the leader checks nothing.
func (f *FSM) AlertsActive() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.alerts.active()
}

// TooLongDue returns, oldest deadline first and at most limit, the open
// runs whose expect.max_duration deadline is at or before nowNano and
// that were not judged yet: too_long checks for the leader to propose.
func (f *FSM) TooLongDue(nowNano int64, limit int) []*pb.AlertCheck {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*pb.AlertCheck
	f.st.alerts.ix.deadlines.Ascend(func(d runDeadline) bool {
		if d.at > nowNano || len(out) >= limit {
			return false
		}
		if r, ok := f.st.run(d.run); ok {
			out = append(out, &pb.AlertCheck{Job: r.GetJob(), Event: event.TooLong, RunId: d.run})
		}
		return true
	})
	return out
}

// NextTooLong is the earliest too_long deadline still to judge, or 0.
func (f *FSM) NextTooLong() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if d, ok := f.st.alerts.ix.deadlines.Min(); ok {
		return d.at
	}
	return 0
}
