package fsm

import (
	"bufio"
	"fmt"
	"hash"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// format is the snapshot format the trail is written in: 2 while it is
// on, else 1.
func (a *auditTrail) format() uint32 {
	if a.on() {
		return formatAudit
	}
	return formatVersion
}

// header marks a snapshot of a state whose trail is on as format 2, with
// the trail's limit, sequence and count. A trail that is off leaves the
// header at format 1, which builds from before the trail restore: a leader
// of a new build may send its snapshot to an old follower during a rolling
// upgrade, until set_audit (which no old voter allows) turns the trail on.
func (a *auditTrail) header(h *pb.SnapshotHeader) {
	if !a.on() {
		return
	}
	h.FormatVersion = a.format()
	h.AuditLimit = a.limit
	h.AuditSeq = a.seq
	h.AuditCount = uint64(a.records.Len())
}

// writeTo writes the records in seq order after the runs.
func (a *auditTrail) writeTo(put func(proto.Message) error) error {
	if !a.on() {
		return nil
	}
	var err error
	a.records.Ascend(func(ae *pb.AuditEntry) bool {
		if err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Audit{Audit: ae}}); err != nil {
			err = fmt.Errorf("audit record %d: %w", ae.GetRecord().GetSeq(), err)
		}
		return err == nil
	})
	return err
}

// readAudit reads the trail a format-2 snapshot carries after its runs.
func readAudit(r *bufio.Reader, dec protodelim.UnmarshalOptions, a *auditTrail, h *pb.SnapshotHeader) error {
	count := h.GetAuditCount()
	if h.GetFormatVersion() != formatAudit {
		return nil
	}
	switch limit := h.GetAuditLimit(); {
	case limit < 1 || limit > MaxAuditLimit:
		return fmt.Errorf("audit limit %d outside 1..%d", limit, MaxAuditLimit)
	case count > uint64(limit):
		return fmt.Errorf("%d audit records exceed the limit %d", count, limit)
	}
	a.limit, a.seq = h.GetAuditLimit(), h.GetAuditSeq()
	prev := uint64(0)
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("audit record %d of %d: %w", i+1, count, truncated(err))
		}
		ae := rec.GetAudit()
		seq := ae.GetRecord().GetSeq()
		switch {
		case ae.GetRecord() == nil:
			return fmt.Errorf("record %d of %d audit records is not an audit record", i+1, count)
		case seq <= prev:
			return fmt.Errorf("audit record %d follows %d: records must be in strictly increasing seq order", seq, prev)
		case seq > a.seq:
			return fmt.Errorf("audit record %d is beyond the trail's last sequence number %d", seq, a.seq)
		}
		prev = seq
		// The stored form, as Apply keeps the specs (stored.go), so the
		// restored state hashes and snapshots as the original does.
		for _, spec := range []*pb.JobSpec{ae.GetSpecBefore(), ae.GetSpecAfter()} {
			if spec != nil {
				storeSpec(spec)
			}
		}
		a.records.ReplaceOrInsert(ae)
	}
	a.rebuildIndex()
	return nil
}

// hash adds the trail to a state hash. A trail that is off adds nothing,
// so states from before the trail hash as they did.
func (a *auditTrail) hash(h hash.Hash, m *marshaler) {
	if !a.on() {
		return
	}
	writeUint(h, uint64(a.limit))
	writeUint(h, a.seq)
	writeUint(h, uint64(a.records.Len()))
	a.records.Ascend(func(ae *pb.AuditEntry) bool {
		m.write(ae, "audit", "")
		return true
	})
}
