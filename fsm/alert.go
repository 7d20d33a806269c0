package fsm

import (
	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Alerts (alert_*.go): the channels notifications go to, the cluster-wide
// notify rules, the alert notifications committed (a bounded history) and
// the open episodes. Run events (failed, recovered, missed, too_short, a
// fire that was late) are raised in the very Apply that commits the run's
// outcome or fire, from the committed state and the entry's time: a
// failover can neither lose them nor raise them twice. Time events (late
// with nothing dispatched, too_long, no_success, reminders) have no entry
// of their own: the leader proposes check_alerts, stamped with its clock,
// and each check is judged by that time. Delivery attempts come back in
// record_deliveries. Every alert is state before it is sent.

// defaultAlertLimit is how many alerts are kept until a leader's
// check_alerts or record_deliveries carries its --alert-history-limit.
const defaultAlertLimit = 1000

// MaxAlertLimit bounds the alert history a command may ask for.
const MaxAlertLimit = 100_000

// alertState holds the alert section. Stored values are immutable, like
// jobs: every change stores a fresh one.
type alertState struct {
	channels *btree.BTreeG[channelItem]
	rules    *btree.BTreeG[ruleItem]
	// alerts are the newest limit notifications, by seq.
	alerts *btree.BTreeG[*pb.Alert]
	// episodes are the open episodes, by (job, event).
	episodes *btree.BTreeG[*pb.AlertEpisode]
	// seq is the last alert sequence number issued; never reused.
	seq   uint64
	limit uint32

	// ix holds what is derived from the above and the runs, rebuilt by
	// Restore (alert_index.go).
	ix *alertIndex
}

type channelItem struct {
	name    string
	channel *pb.Channel
}

type ruleItem struct {
	name string
	rule *pb.NotifyRule
}

func channelLess(a, b channelItem) bool { return a.name < b.name }
func ruleLess(a, b ruleItem) bool       { return a.name < b.name }
func alertLess(a, b *pb.Alert) bool     { return a.GetSeq() < b.GetSeq() }

func episodeLess(a, b *pb.AlertEpisode) bool {
	if a.GetJob() != b.GetJob() {
		return a.GetJob() < b.GetJob()
	}
	return a.GetEvent() < b.GetEvent()
}

func newAlertState() alertState {
	return alertState{
		channels: btree.NewG(treeDegree, channelLess),
		rules:    btree.NewG(treeDegree, ruleLess),
		alerts:   btree.NewG(treeDegree, alertLess),
		episodes: btree.NewG(treeDegree, episodeLess),
		ix:       newAlertIndex(),
	}
}

// capture is a copy for a snapshot (copy-on-write); it has no index.
func (a *alertState) capture() alertState {
	return alertState{
		channels: a.channels.Clone(), rules: a.rules.Clone(),
		alerts: a.alerts.Clone(), episodes: a.episodes.Clone(),
		seq: a.seq, limit: a.limit,
	}
}

// empty reports a state that never had alerts: it snapshots and hashes as
// the states from before alerts existed.
func (a *alertState) empty() bool {
	return a.channels.Len() == 0 && a.rules.Len() == 0 && a.alerts.Len() == 0 &&
		a.episodes.Len() == 0 && a.seq == 0 && a.limit == 0
}

// active reports whether any alert can be raised at all: without a
// channel there is no one to tell, and the fire path pays one check.
func (a *alertState) active() bool { return a.channels.Len() > 0 }

func (a *alertState) channel(name string) (*pb.Channel, bool) {
	it, ok := a.channels.Get(channelItem{name: name})
	return it.channel, ok
}

func (a *alertState) rule(name string) (*pb.NotifyRule, bool) {
	it, ok := a.rules.Get(ruleItem{name: name})
	return it.rule, ok
}

func (a *alertState) historyLimit() int {
	if a.limit == 0 {
		return defaultAlertLimit
	}
	return int(a.limit)
}

// setLimit takes a leader's --alert-history-limit (0: unchanged) and
// prunes to it.
func (s *state) setAlertLimit(limit uint32) {
	if limit == 0 || limit == s.alerts.limit {
		return
	}
	s.alerts.limit = min(limit, MaxAlertLimit)
	s.pruneAlerts()
	s.tx.touch()
}

// putChannel stores a channel: version 1 for a new name, else the next
// version. A channel equal to the stored one changes nothing.
func putChannel(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetPutChannel()
	in := p.GetChannel()
	if err := checkChannel(in); err != nil {
		return outcome{}, err
	}
	old, exists := s.alerts.channel(in.GetName())
	if v := p.GetExpectedVersion(); v != 0 && v != old.GetVersion() {
		return outcome{}, fail(ErrVersionMismatch, "channel %q is at version %d, not %d", in.GetName(), old.GetVersion(), v)
	}
	next := proto.CloneOf(in)
	next.Version, next.UpdatedAt, next.UpdatedBy = 0, nil, ""
	if exists && proto.Equal(next, withoutMeta(old)) {
		return outcome{channel: old}, nil
	}
	next.Version = old.GetVersion() + 1
	next.UpdatedAt, next.UpdatedBy = e.timestamp(), e.principal
	s.alerts.channels.ReplaceOrInsert(channelItem{name: next.GetName(), channel: next})
	s.tx.alertChanged()
	return outcome{changed: true, created: !exists, channel: next}, nil
}

// withoutMeta is a stored channel without what the FSM sets, for the
// no-op check.
func withoutMeta(ch *pb.Channel) *pb.Channel {
	c := proto.CloneOf(ch)
	c.Version, c.UpdatedAt, c.UpdatedBy = 0, nil, ""
	return c
}

// checkChannel checks what the FSM needs of a channel: a name and one
// target. The API checks the rest.
func checkChannel(ch *pb.Channel) error {
	if ch == nil || ch.GetName() == "" {
		return malformed("put_channel.channel.name must not be empty")
	}
	n := 0
	for _, set := range []bool{ch.GetWebhook() != nil, ch.GetSlack() != nil, ch.GetPagerduty() != nil, ch.GetEmail() != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return malformed("put_channel.channel: exactly one of webhook, slack, pagerduty and email must be set, got %d", n)
	}
	return nil
}

// deleteChannel deletes a channel. Alerts already committed for it stay;
// their delivery fails (the leader finds no channel).
func deleteChannel(s *state, c *pb.Command, _ entry) (outcome, error) {
	name := c.GetDeleteChannel().GetName()
	if name == "" {
		return outcome{}, malformed("delete_channel.name must not be empty")
	}
	if _, ok := s.alerts.channel(name); !ok {
		return outcome{}, fail(ErrNotFound, "channel %q not found", name)
	}
	s.alerts.channels.Delete(channelItem{name: name})
	s.tx.alertChanged()
	return outcome{changed: true}, nil
}

// putNotifyRule stores a cluster-wide notify rule, as putChannel does a
// channel.
func putNotifyRule(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetPutNotifyRule()
	in := p.GetRule()
	if in.GetName() == "" || in.GetChannel() == "" {
		return outcome{}, malformed("put_notify_rule.rule: name and channel must not be empty")
	}
	old, exists := s.alerts.rule(in.GetName())
	if v := p.GetExpectedVersion(); v != 0 && v != old.GetVersion() {
		return outcome{}, fail(ErrVersionMismatch, "notify rule %q is at version %d, not %d", in.GetName(), old.GetVersion(), v)
	}
	next := proto.CloneOf(in)
	next.Version, next.UpdatedAt, next.UpdatedBy = 0, nil, ""
	if exists {
		o := proto.CloneOf(old)
		o.Version, o.UpdatedAt, o.UpdatedBy = 0, nil, ""
		if proto.Equal(next, o) {
			return outcome{rule: old}, nil
		}
	}
	next.Version = old.GetVersion() + 1
	next.UpdatedAt, next.UpdatedBy = e.timestamp(), e.principal
	s.alerts.rules.ReplaceOrInsert(ruleItem{name: next.GetName(), rule: next})
	s.tx.alertChanged()
	return outcome{changed: true, created: !exists, rule: next}, nil
}

func deleteNotifyRule(s *state, c *pb.Command, _ entry) (outcome, error) {
	name := c.GetDeleteNotifyRule().GetName()
	if name == "" {
		return outcome{}, malformed("delete_notify_rule.name must not be empty")
	}
	if _, ok := s.alerts.rule(name); !ok {
		return outcome{}, fail(ErrNotFound, "notify rule %q not found", name)
	}
	s.alerts.rules.Delete(ruleItem{name: name})
	s.tx.alertChanged()
	return outcome{changed: true}, nil
}

// scopedAlertConfig wraps the channel and rule writes so that a caller
// with a selector touches only channels whose labels, and rules whose
// selector, include it, before and after: one outside reads as missing
// (delete) or taken (put).
func scopedAlertConfig(h handler) handler {
	return func(s *state, c *pb.Command, e entry) (outcome, error) {
		sel := c.GetCaller().GetSelector()
		if len(sel) == 0 {
			return h(s, c, e)
		}
		switch k := c.GetKind().(type) {
		case *pb.Command_PutChannel:
			ch := k.PutChannel.GetChannel()
			if !SelectorMatches(ch.GetLabels(), sel) {
				return outcome{}, fail(ErrInvalid, "labels: channel %q must carry every label of the caller's selector", ch.GetName())
			}
			if old, ok := s.alerts.channel(ch.GetName()); ok && !SelectorMatches(old.GetLabels(), sel) {
				return outcome{}, fail(ErrAlreadyExists, "channel %q already exists", ch.GetName())
			}
		case *pb.Command_DeleteChannel:
			if old, ok := s.alerts.channel(k.DeleteChannel.GetName()); ok && !SelectorMatches(old.GetLabels(), sel) {
				return outcome{}, fail(ErrNotFound, "channel %q not found", k.DeleteChannel.GetName())
			}
		case *pb.Command_PutNotifyRule:
			r := k.PutNotifyRule.GetRule()
			if !SelectorMatches(r.GetSelector(), sel) {
				return outcome{}, fail(ErrInvalid, "selector: notify rule %q must select within the caller's selector", r.GetName())
			}
			if old, ok := s.alerts.rule(r.GetName()); ok && !SelectorMatches(old.GetSelector(), sel) {
				return outcome{}, fail(ErrAlreadyExists, "notify rule %q already exists", r.GetName())
			}
		case *pb.Command_DeleteNotifyRule:
			if old, ok := s.alerts.rule(k.DeleteNotifyRule.GetName()); ok && !SelectorMatches(old.GetSelector(), sel) {
				return outcome{}, fail(ErrNotFound, "notify rule %q not found", k.DeleteNotifyRule.GetName())
			}
		}
		return h(s, c, e)
	}
}
