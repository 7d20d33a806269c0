package fsm

import (
	"bufio"
	"fmt"
	"hash"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The alert section is the snapshot's last, after the secrets:
// header.channel_count channels and header.notify_rule_count rules, each
// in strictly increasing name order, header.alert_count alerts in strictly
// increasing seq order (none above header.alert_seq), then
// header.episode_count open episodes in (job, event) order. A state that
// never had alerts writes none and reads as the snapshots from before
// alerts existed; a build from before them refuses a snapshot with some
// ("data after the last record"), which it could not honour. The index is
// derived: Restore rebuilds it.

func (a *alertState) header(h *pb.SnapshotHeader) {
	h.ChannelCount = uint64(a.channels.Len())
	h.NotifyRuleCount = uint64(a.rules.Len())
	h.AlertCount = uint64(a.alerts.Len())
	h.EpisodeCount = uint64(a.episodes.Len())
	h.AlertSeq = a.seq
	h.AlertLimit = a.limit
}

func (a *alertState) writeTo(put func(proto.Message) error) error {
	var err error
	a.channels.Ascend(func(it channelItem) bool {
		err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Channel{Channel: it.channel}})
		return err == nil
	})
	a.rules.Ascend(func(it ruleItem) bool {
		if err == nil {
			err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_NotifyRule{NotifyRule: it.rule}})
		}
		return err == nil
	})
	a.alerts.Ascend(func(al *pb.Alert) bool {
		if err == nil {
			err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Alert{Alert: al}})
		}
		return err == nil
	})
	a.episodes.Ascend(func(ep *pb.AlertEpisode) bool {
		if err == nil {
			err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Episode{Episode: ep}})
		}
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("alert section: %w", err)
	}
	return nil
}

// readAlerts reads the alert section the header announces into a, checking
// each record's kind and order.
func (a *alertState) readAlerts(r *bufio.Reader, dec protodelim.UnmarshalOptions, h *pb.SnapshotHeader) error {
	a.seq, a.limit = h.GetAlertSeq(), h.GetAlertLimit()
	next := func(what string, i, n uint64) (*pb.SnapshotRecord, error) {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return nil, fmt.Errorf("%s record %d of %d: %w", what, i+1, n, truncated(err))
		}
		return &rec, nil
	}
	prev := ""
	for i, n := uint64(0), h.GetChannelCount(); i < n; i++ {
		rec, err := next("channel", i, n)
		if err != nil {
			return err
		}
		ch := rec.GetChannel()
		if ch == nil || checkChannel(ch) != nil || (i > 0 && ch.GetName() <= prev) {
			return fmt.Errorf("channel record %d of %d is no channel, or out of name order", i+1, n)
		}
		prev = ch.GetName()
		a.channels.ReplaceOrInsert(channelItem{name: ch.GetName(), channel: ch})
	}
	prev = ""
	for i, n := uint64(0), h.GetNotifyRuleCount(); i < n; i++ {
		rec, err := next("notify rule", i, n)
		if err != nil {
			return err
		}
		rl := rec.GetNotifyRule()
		if rl == nil || rl.GetName() == "" || (i > 0 && rl.GetName() <= prev) {
			return fmt.Errorf("notify rule record %d of %d is no rule, or out of name order", i+1, n)
		}
		prev = rl.GetName()
		a.rules.ReplaceOrInsert(ruleItem{name: rl.GetName(), rule: rl})
	}
	var last uint64
	for i, n := uint64(0), h.GetAlertCount(); i < n; i++ {
		rec, err := next("alert", i, n)
		if err != nil {
			return err
		}
		al := rec.GetAlert()
		if al == nil || al.GetSeq() <= last || al.GetSeq() > a.seq || al.GetId() == "" {
			return fmt.Errorf("alert record %d of %d is no alert, out of seq order or beyond the header's seq", i+1, n)
		}
		last = al.GetSeq()
		a.alerts.ReplaceOrInsert(al)
	}
	var prevEp *pb.AlertEpisode
	for i, n := uint64(0), h.GetEpisodeCount(); i < n; i++ {
		rec, err := next("episode", i, n)
		if err != nil {
			return err
		}
		ep := rec.GetEpisode()
		if ep == nil || ep.GetId() == "" || (prevEp != nil && !episodeLess(prevEp, ep)) {
			return fmt.Errorf("episode record %d of %d is no episode, or out of order", i+1, n)
		}
		prevEp = ep
		a.episodes.ReplaceOrInsert(ep)
	}
	return nil
}

// hash adds the alert section to a state hash; a state that never had
// alerts adds nothing, so it hashes as before alerts existed.
func (a *alertState) hash(h hash.Hash, m *marshaler) {
	if a.empty() {
		return
	}
	writeUint(h, a.seq)
	writeUint(h, uint64(a.limit))
	writeUint(h, uint64(a.channels.Len()))
	a.channels.Ascend(func(it channelItem) bool {
		m.write(it.channel, "channel", it.name)
		return true
	})
	writeUint(h, uint64(a.rules.Len()))
	a.rules.Ascend(func(it ruleItem) bool {
		m.write(it.rule, "notify rule", it.name)
		return true
	})
	writeUint(h, uint64(a.alerts.Len()))
	a.alerts.Ascend(func(al *pb.Alert) bool {
		m.write(al, "alert", al.GetId())
		return true
	})
	writeUint(h, uint64(a.episodes.Len()))
	a.episodes.Ascend(func(ep *pb.AlertEpisode) bool {
		m.write(ep, "episode", ep.GetId())
		return true
	})
}
