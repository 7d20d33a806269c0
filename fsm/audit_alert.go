package fsm

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Actions of the audit records of channel and notify rule writes.
const (
	AuditChannelPut       = "channel_put"
	AuditChannelDelete    = "channel_delete"
	AuditNotifyRulePut    = "notify_rule_put"
	AuditNotifyRuleDelete = "notify_rule_delete"
)

// The audited channel and rule handlers record a write that changed
// something in the same Apply, keeping the value before and after; the
// diff is rendered on read, with the fields that may hold secrets hidden
// (hiddenFields), as a job's.

func auditedPutChannel(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.alerts.channel(c.GetPutChannel().GetChannel().GetName())
	o, err := putChannel(s, c, e)
	if err == nil && o.changed && s.audit.on() {
		s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditChannelPut, Channel: o.channel.GetName(),
			VersionBefore: before.GetVersion(), VersionAfter: o.channel.GetVersion()}, ChannelBefore: before, ChannelAfter: o.channel})
	}
	return o, err
}

func auditedDeleteChannel(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.alerts.channel(c.GetDeleteChannel().GetName())
	o, err := deleteChannel(s, c, e)
	if err == nil && s.audit.on() {
		s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditChannelDelete, Channel: before.GetName(),
			VersionBefore: before.GetVersion()}, ChannelBefore: before})
	}
	return o, err
}

func auditedPutNotifyRule(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.alerts.rule(c.GetPutNotifyRule().GetRule().GetName())
	o, err := putNotifyRule(s, c, e)
	if err == nil && o.changed && s.audit.on() {
		s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditNotifyRulePut, NotifyRule: o.rule.GetName(),
			VersionBefore: before.GetVersion(), VersionAfter: o.rule.GetVersion()}, RuleBefore: before, RuleAfter: o.rule})
	}
	return o, err
}

func auditedDeleteNotifyRule(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.alerts.rule(c.GetDeleteNotifyRule().GetName())
	o, err := deleteNotifyRule(s, c, e)
	if err == nil && s.audit.on() {
		s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditNotifyRuleDelete, NotifyRule: before.GetName(),
			VersionBefore: before.GetVersion()}, RuleBefore: before})
	}
	return o, err
}

// alertConfigChanges renders a channel's or rule's diff on read, without
// the fields the cluster sets.
func alertConfigChanges(before, after proto.Message, empty proto.Message) []*pb.AuditChange {
	strip := func(m proto.Message) proto.Message {
		if m == nil || !m.ProtoReflect().IsValid() {
			return empty
		}
		c := proto.Clone(m)
		f := c.ProtoReflect()
		for _, name := range []string{"version", "updated_at", "updated_by"} {
			f.Clear(f.Descriptor().Fields().ByName(protoreflect.Name(name)))
		}
		return c
	}
	var d differ
	d.message("", strip(before).ProtoReflect(), strip(after).ProtoReflect())
	return capChanges(d.out)
}
