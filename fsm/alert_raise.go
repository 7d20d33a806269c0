package fsm

import (
	"strconv"
	"strings"
	"time"

	"github.com/raftcron/raftcron/alert/event"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxOutputTail bounds the output an alert carries.
const maxOutputTail = 512

// notifyRule is one notify entry as it applies to a job: the job's own,
// or a cluster-wide rule whose selector its labels carry.
type notifyRule struct {
	channel       string
	on            event.Set
	afterFailures uint32
	repeat        int64 // ns; 0: no reminders
}

// rulesFor are the notify entries that apply to the job of the stored
// spec: its own, then the cluster-wide rules by name.
func (s *state) rulesFor(spec *pb.JobSpec) []notifyRule {
	var out []notifyRule
	for _, n := range spec.GetNotify() {
		out = append(out, notifyRule{channel: n.GetChannel(), on: event.Of(n.GetOn()),
			afterFailures: n.GetAfterFailures(), repeat: n.GetRepeat().AsDuration().Nanoseconds()})
	}
	s.alerts.rules.Ascend(func(it ruleItem) bool {
		r := it.rule
		if SpecHasLabels(spec, r.GetSelector()) {
			out = append(out, notifyRule{channel: r.GetChannel(), on: event.Of(r.GetOn()),
				afterFailures: r.GetAfterFailures(), repeat: r.GetRepeat().AsDuration().Nanoseconds()})
		}
		return true
	})
	return out
}

// happening is an event of a job about to be raised.
type happening struct {
	name   string
	run    *pb.Run // nil for an event about no run (no_success, late)
	slot   int64
	token  uint64
	reason string
	// failures is the job's failures in a row; failed goes to a rule only
	// once it reaches the rule's after_failures.
	failures uint32
}

// raise records ev of the job it for every channel of its rules that
// subscribes to ev (and, for failed, whose threshold ev reaches) and was
// not paged in the job's open episode of ev yet, opening that episode if
// none is. So a channel is paged once per episode, whatever happens until
// recovered closes it; reminders are remind's.
func (s *state) raise(it jobItem, ev happening, e entry) {
	spec := it.job.GetSpec()
	ep, open := s.alerts.episodes.Get(&pb.AlertEpisode{Job: it.name, Event: ev.name})
	var chans []string
	for _, r := range s.rulesFor(spec) {
		switch {
		case !r.on.Has(ev.name),
			ev.name == event.Failed && ev.failures < r.afterFailures,
			open && paged(ep, r.channel),
			containsString(chans, r.channel):
			continue
		}
		if _, ok := s.alerts.channel(r.channel); ok {
			chans = append(chans, r.channel)
		}
	}
	if len(chans) == 0 {
		return
	}
	next := &pb.AlertEpisode{Job: it.name, Event: ev.name, OpenedAtUnixNano: e.proposedAt}
	if open {
		next.Id, next.OpenedAtUnixNano, next.Channels = ep.GetId(), ep.GetOpenedAtUnixNano(), append([]*pb.EpisodeChannel(nil), ep.GetChannels()...)
	}
	labels := specLabels(spec)
	for _, ch := range chans {
		a := s.newAlert(it.name, ev, ch, labels, e)
		if next.Id == "" {
			next.Id = episodeID(a.GetSeq(), e.proposedAt)
		}
		a.Episode = next.Id
		next.Channels = append(next.Channels, &pb.EpisodeChannel{Channel: ch, LastSentAtUnixNano: e.proposedAt})
		s.putAlert(a)
	}
	s.putEpisode(next)
}

// recover closes the job's open episodes that a successful run r ends
// (all of them, but too_short when keepTooShort: a run that succeeded too
// fast ends the others only), with a recovered alert for each channel
// paged in one that subscribes to recovered — a PagerDuty channel always,
// since its incident must resolve.
func (s *state) recover(it jobItem, r *pb.Run, keepTooShort bool, e entry) {
	var closing []*pb.AlertEpisode
	s.alerts.episodes.AscendGreaterOrEqual(&pb.AlertEpisode{Job: it.name}, func(ep *pb.AlertEpisode) bool {
		if ep.GetJob() != it.name {
			return false
		}
		if !(keepTooShort && ep.GetEvent() == event.TooShort) {
			closing = append(closing, ep)
		}
		return true
	})
	if len(closing) == 0 {
		return
	}
	spec := it.job.GetSpec()
	rules := s.rulesFor(spec)
	labels := specLabels(spec)
	for _, ep := range closing {
		for _, pc := range ep.GetChannels() {
			ch, ok := s.alerts.channel(pc.GetChannel())
			if !ok || !(ch.GetPagerduty() != nil || subscribes(rules, pc.GetChannel(), event.Recovered)) {
				continue
			}
			a := s.newAlert(it.name, happening{name: event.Recovered, run: r, slot: r.GetSlotUnix(), token: tokenOf(r)}, pc.GetChannel(), labels, e)
			a.Episode, a.EpisodeEvent = ep.GetId(), ep.GetEvent()
			s.putAlert(a)
		}
		s.deleteEpisode(ep)
	}
}

// remind raises the next reminder of the open episode ep on channel ch,
// if a rule for it repeats and its time has come.
func (s *state) remind(it jobItem, ep *pb.AlertEpisode, ch string, e entry) bool {
	var repeat int64
	for _, r := range s.rulesFor(it.job.GetSpec()) {
		if r.channel == ch && r.on.Has(ep.GetEvent()) && r.repeat > 0 && (repeat == 0 || r.repeat < repeat) {
			repeat = r.repeat
		}
	}
	i := pagedAt(ep, ch)
	if repeat == 0 || i < 0 {
		return false
	}
	pc := ep.GetChannels()[i]
	if e.proposedAt < addSaturating(pc.GetLastSentAtUnixNano(), time.Duration(repeat)) {
		return false
	}
	if _, ok := s.alerts.channel(ch); !ok {
		return false
	}
	a := s.newAlert(it.name, happening{name: ep.GetEvent()}, ch, specLabels(it.job.GetSpec()), e)
	a.Episode, a.Reminder = ep.GetId(), pc.GetReminders()+1
	s.putAlert(a)
	next := &pb.AlertEpisode{Id: ep.GetId(), Job: ep.GetJob(), Event: ep.GetEvent(), OpenedAtUnixNano: ep.GetOpenedAtUnixNano(),
		Channels: append([]*pb.EpisodeChannel(nil), ep.GetChannels()...)}
	next.Channels[i] = &pb.EpisodeChannel{Channel: ch, LastSentAtUnixNano: e.proposedAt, Reminders: a.GetReminder()}
	s.putEpisode(next)
	return true
}

// newAlert is a pending alert of ev for channel ch, with the next seq.
func (s *state) newAlert(job string, ev happening, ch string, labels map[string]string, e entry) *pb.Alert {
	s.alerts.seq++
	a := &pb.Alert{
		Id: alertID(s.alerts.seq, e.proposedAt), Seq: s.alerts.seq, Job: job, Event: ev.name, Channel: ch,
		SlotUnix: ev.slot, Token: ev.token, AtUnixNano: e.proposedAt, Reason: ev.reason,
		ConsecutiveFailures: ev.failures, Labels: labels, Delivery: pb.DeliveryState_DELIVERY_STATE_PENDING,
	}
	if r := ev.run; r != nil {
		a.RunId, a.Outcome = r.GetId(), r.GetState()
		if cur := CurrentAttempt(r); cur != nil {
			if d := cur.GetFinishedAtUnixNano() - cur.GetStartedAtUnixNano(); cur.GetFinishedAtUnixNano() > 0 && d >= 0 {
				a.DurationMs = d / int64(time.Millisecond)
			}
			a.OutputTail = outputTail(cur.GetOutput())
		}
	}
	return a
}

// alertID and episodeID are unique in the cluster's history: the seq
// never repeats in a state, and the time (base 36) tells them apart from
// a state that was started afresh.
func alertID(seq uint64, at int64) string {
	return "a" + strconv.FormatUint(seq, 10) + "-" + strconv.FormatInt(at, 36)
}

func episodeID(seq uint64, at int64) string {
	return "e" + strconv.FormatUint(seq, 10) + "-" + strconv.FormatInt(at, 36)
}

func paged(ep *pb.AlertEpisode, ch string) bool { return pagedAt(ep, ch) >= 0 }

func pagedAt(ep *pb.AlertEpisode, ch string) int {
	for i, pc := range ep.GetChannels() {
		if pc.GetChannel() == ch {
			return i
		}
	}
	return -1
}

func subscribes(rules []notifyRule, ch, ev string) bool {
	for _, r := range rules {
		if r.channel == ch && r.on.Has(ev) {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func tokenOf(r *pb.Run) uint64 {
	if cur := CurrentAttempt(r); cur != nil {
		return cur.GetToken()
	}
	return 0
}

// outputTail is the end of an attempt's output, valid UTF-8.
func outputTail(out []byte) string {
	if len(out) > maxOutputTail {
		out = out[len(out)-maxOutputTail:]
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// specLabels are a stored (or plain) spec's labels as a fresh map, nil
// for none.
func specLabels(spec *pb.JobSpec) map[string]string {
	if len(spec.GetLabels()) > 0 {
		out := make(map[string]string, len(spec.GetLabels()))
		for k, v := range spec.GetLabels() {
			out[k] = v
		}
		return out
	}
	var out map[string]string
	eachLabel(spec, func(k, v []byte) bool {
		if out == nil {
			out = map[string]string{}
		}
		out[string(k)] = string(v)
		return true
	})
	return out
}
