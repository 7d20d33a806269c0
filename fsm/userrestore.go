package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A user restore (`raftcron snapshot restore`) rolls the registry and the
// ledger back to a backup file and keeps everything else the cluster holds
// now. The rule: restore keeps every piece of live state except jobs, runs
// and counter — the file's jobs, tombstones, retired generation and runs
// come in, the fencing counter becomes the larger of the two, and the ACL
// tokens and bootstrap flag, the audit trail, the cluster version, the run
// tally and every kind of state a later build adds stay as they are live.
// A deleted token so never comes back, bootstrap never reopens, and the
// trail keeps what happened since the file was taken, plus one record of
// the restore itself.
//
// Raft restores a stream on the leader and followers install the leader's
// copy of it (backup/DESIGN.md), so the merge is made here, into the
// stream, while the leader proposes nothing; the FSM's Restore stays
// exact. The stream is the live state's header with the file's counts of
// the registry, the file's registry records byte for byte, then the live
// records after the ledger (writeLive): state a later build adds there is
// kept with no change here.
//
// From cluster version 3 (version3). Below it the leader gives Raft the
// file as it is, counter raised, as release 2 did: the cluster may still
// hold voters of that release, and every node restores what the leader
// hands it.

// Layout says where a snapshot stream's header and its registry and ledger
// records (jobs, tombstones, runs, calendars) end, in bytes from its start.
type Layout struct {
	HeaderEnd   int64
	RegistryEnd int64
}

// RestoreRecord is what the audit record of a user restore says beyond
// the counts the FSM knows: who asked, when (the leader's clock), and the
// backup file's header, as changes with the file's values in after.
type RestoreRecord struct {
	Principal  string
	AtUnixNano int64
	File       []*pb.AuditChange
}

// AuditSnapshotRestore is the action of a user restore's audit record.
const AuditSnapshotRestore = "snapshot_restore"

// UserRestore is the stream a user restore hands Raft, and what it does.
type UserRestore struct {
	Stream io.Reader
	Size   int64
	// FencingCounter is the counter the restored state starts with.
	FencingCounter uint64
	// KeptLive says the live state but jobs, runs and counter was kept;
	// false below cluster version 3, where the file replaces everything.
	KeptLive bool
}

// UserRestore builds the stream that restores file — size bytes of a
// snapshot stream laid out as l, which the caller checked whole
// (InspectSnapshot) and made orphans of (OrphanDispatched) — into this
// live state, and appends rec to the audit trail it carries while the
// trail is on. Call it only while the leader proposes nothing and has
// applied every entry (cluster.RestoreFunc): it reads the live state, and
// what it read must stay true until Raft restores the stream.
func (f *FSM) UserRestore(file io.ReaderAt, size int64, l Layout, rec RestoreRecord) (UserRestore, error) {
	fh, err := readHeaderAt(file, l)
	if err != nil {
		return UserRestore{}, err
	}
	f.mu.Lock() // capture writes the trees' copy-on-write bookkeeping
	live := f.st.capture()
	f.mu.Unlock()
	counter := max(fh.GetFencingCounter(), live.counter)
	if !live.atLeast(version3) {
		r, grown, err := WithCounterFloor(io.NewSectionReader(file, 0, size), live.counter)
		return UserRestore{Stream: r, Size: size + grown, FencingCounter: counter}, err
	}
	live.audit.recordRestore(restoreRecord(rec, fh, &live, counter))
	h := live.header()
	h.FencingCounter = counter
	h.JobCount, h.TombstoneCount, h.RunCount = fh.GetJobCount(), fh.GetTombstoneCount(), fh.GetRunCount()
	h.CalendarCount = fh.GetCalendarCount()
	h.RetiredGeneration = fh.GetRetiredGeneration()
	head, err := records(func(put func(proto.Message) error) error { return put(h) })
	if err != nil {
		return UserRestore{}, fmt.Errorf("fsm: user restore: header: %w", err)
	}
	tail, err := records(live.writeLive)
	if err != nil {
		return UserRestore{}, fmt.Errorf("fsm: user restore: live state: %w", err)
	}
	registry := io.NewSectionReader(file, l.HeaderEnd, l.RegistryEnd-l.HeaderEnd)
	return UserRestore{
		Stream:         io.MultiReader(head, registry, tail),
		Size:           int64(head.Len()) + registry.Size() + int64(tail.Len()),
		FencingCounter: counter,
		KeptLive:       true,
	}, nil
}

// readHeaderAt decodes the header of a snapshot stream laid out as l.
func readHeaderAt(file io.ReaderAt, l Layout) (*pb.SnapshotHeader, error) {
	if l.HeaderEnd <= 0 || l.RegistryEnd < l.HeaderEnd {
		return nil, fmt.Errorf("fsm: user restore: layout %+v names no header", l)
	}
	raw := make([]byte, l.HeaderEnd)
	if _, err := file.ReadAt(raw, 0); err != nil {
		return nil, fmt.Errorf("fsm: user restore: header: %w", err)
	}
	_, n := binary.Uvarint(raw)
	var h pb.SnapshotHeader
	if n <= 0 || proto.Unmarshal(raw[n:], &h) != nil {
		return nil, fmt.Errorf("fsm: user restore: the header does not decode")
	}
	return &h, checkFormat(&h)
}

// records encodes what write puts, as records of a snapshot stream.
func records(write func(put func(proto.Message) error) error) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	rw := recordWriter{w: bufio.NewWriter(&buf)}
	if err := write(rw.put); err != nil {
		return nil, err
	}
	return &buf, rw.w.Flush()
}

// restoreRecord is the audit record of a restore of a file with header fh
// into live, which ends with counter.
func restoreRecord(rec RestoreRecord, fh *pb.SnapshotHeader, live *state, counter uint64) *pb.AuditRecord {
	count := func(field string, before, after uint64) *pb.AuditChange {
		return &pb.AuditChange{Field: field, Before: strconv.FormatUint(before, 10), After: strconv.FormatUint(after, 10)}
	}
	changes := append([]*pb.AuditChange{
		count("jobs", uint64(live.jobs.Len()), fh.GetJobCount()),
		count("runs", uint64(live.runs.Len()), fh.GetRunCount()),
		count("fencing_counter", live.counter, counter),
	}, rec.File...)
	return &pb.AuditRecord{
		AtUnixNano: rec.AtUnixNano,
		Principal:  rec.Principal,
		Action:     AuditSnapshotRestore,
		Changes:    capChanges(changes),
	}
}

// recordRestore appends the record of a user restore to a captured trail,
// which has no derived index, while the trail is on. Its index stays 0:
// Raft picks the restored state's index after the stream is built.
func (a *auditTrail) recordRestore(r *pb.AuditRecord) {
	if !a.on() {
		return
	}
	a.seq++
	r.Seq = a.seq
	a.records.ReplaceOrInsert(&pb.AuditEntry{Record: r})
	for a.records.Len() > int(a.limit) {
		a.records.DeleteMin()
	}
}
