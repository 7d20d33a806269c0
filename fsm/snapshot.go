package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/google/btree"
	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The snapshot stream is a sequence of length-delimited protobuf records:
// one SnapshotHeader, then header.job_count SnapshotRecords holding jobs
// (status filled in) in name order, then header.tombstone_count holding
// tombstones in name order, then header.run_count holding runs in id order,
// then header.calendar_count holding calendars in name order, then
// header.acl_token_count holding ACL tokens in accessor order, then
// (format 2) header.audit_count holding audit records in seq order, then
// header.secret_count holding sealed secrets in name order, then
// header.freeze_count holding freezes in name order, then the alert
// section (alert_snapshot.go), then the end of the stream. Records are
// written and read one at a time,
// so neither side holds more than the state plus one record.
const (
	// formatVersion is what a snapshot without an audit trail is written
	// in: builds from before the trail read it. formatAudit adds the trail.
	formatVersion = 1
	formatAudit   = 2
	// maxRecordSize bounds one record: far above the 4 MiB a gRPC request
	// may carry, so every job the API accepted fits, while a corrupt length
	// prefix cannot make Restore allocate gigabytes.
	maxRecordSize = 64 << 20
	ioBufferSize  = 64 << 10
)

// ErrSnapshotFormat is returned by Restore for a snapshot written in a
// format this build does not read.
var ErrSnapshotFormat = errors.New("unsupported snapshot format version")

// Snapshot captures the state in O(1): the trees are copy-on-write, so the
// capture is unaffected by later Applies and all the work happens in Persist.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &snapshot{st: f.st.capture()}, nil
}

type snapshot struct {
	st state
}

// Persist streams the captured state into the sink and cancels the sink if
// anything fails, so Raft never keeps a partial snapshot.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.st.writeTo(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("fsm: persist snapshot: close sink: %w", err)
	}
	return nil
}

// Release has nothing to free: the captured trees are garbage once dropped.
func (s *snapshot) Release() {}

func (s *state) writeTo(w io.Writer) error {
	rw := recordWriter{w: bufio.NewWriterSize(w, ioBufferSize)}
	if err := rw.put(s.header()); err != nil {
		return err
	}
	if err := s.writeRegistry(&rw); err != nil {
		return err
	}
	if err := s.writeLive(rw.put); err != nil {
		return err
	}
	return rw.w.Flush()
}

// header is the snapshot header of s.
func (s *state) header() *pb.SnapshotHeader {
	h := &pb.SnapshotHeader{
		FormatVersion:     formatVersion,
		FencingCounter:    s.counter,
		JobCount:          uint64(s.jobs.Len()),
		TombstoneCount:    uint64(s.tombstones.Len()),
		RunCount:          uint64(s.runs.Len()),
		RetiredGeneration: s.retired,
		AclTokenCount:     uint64(s.acl.tokens.Len()),
		AclBootstrapped:   s.acl.bootstrapped,
		ClusterVersion:    s.headerVersion(),
		RunCounts:         s.tally.records(),
		CalendarCount:     uint64(s.cals.cals.Len()),
		FreezeCount:       uint64(s.freezes.freezes.Len()),
	}
	s.audit.header(h)
	s.secrets.header(h)
	s.alerts.header(h)
	return h
}

// writeRegistry writes the registry and the ledger: jobs, tombstones,
// runs and calendars, the records a user restore takes from its file
// (userrestore.go).
func (s *state) writeRegistry(rw *recordWriter) error {
	var err error
	s.jobs.Ascend(func(it jobItem) bool {
		if err = rw.putJob(it); err != nil {
			err = fmt.Errorf("job %q: %w", it.name, err)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	s.tombstones.Ascend(func(t tombstone) bool {
		err = rw.put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Tombstone{
			Tombstone: &pb.Tombstone{Name: t.name, Generation: t.generation},
		}})
		return err == nil
	})
	if err != nil {
		return err
	}
	s.runs.Ascend(func(it runItem) bool {
		if err = rw.put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Run{Run: it.run}}); err != nil {
			err = fmt.Errorf("run %q: %w", it.id, err)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return s.cals.writeTo(rw.put)
}

// writeLive writes every record after the ledger: the state a user
// restore keeps live (userrestore.go). A new kind of replicated state
// writes its records here, and its counts in header, and a user restore
// then keeps it with no change of its own.
func (s *state) writeLive(put func(proto.Message) error) error {
	if err := s.acl.writeTokens(put); err != nil {
		return err
	}
	if err := s.audit.writeTo(put); err != nil {
		return err
	}
	if err := s.secrets.writeTo(put); err != nil {
		return err
	}
	if err := s.freezes.writeTo(put); err != nil {
		return err
	}
	return s.alerts.writeTo(put)
}

// recordWriter writes length-delimited records, exactly as protodelim
// does, through one reused buffer. A snapshot of a million jobs would
// otherwise leave a gigabyte of garbage behind it (a job with its status,
// a wrapper and a buffer per record) while the heap is at its largest.
type recordWriter struct {
	w   *bufio.Writer
	buf []byte
	// job, rec and wrap are the record of putJob, refilled for each job.
	job  pb.Job
	rec  pb.SnapshotRecord
	wrap pb.SnapshotRecord_Job
}

func (rw *recordWriter) put(m proto.Message) error {
	var err error
	rw.buf, err = snapshotEncoder.MarshalAppend(rw.buf[:0], m)
	if err != nil {
		return err
	}
	if len(rw.buf) > maxRecordSize {
		return fmt.Errorf("record of %d bytes exceeds the %d-byte limit Restore accepts", len(rw.buf), maxRecordSize)
	}
	if _, err := rw.w.Write(binary.AppendUvarint(rw.w.AvailableBuffer(), uint64(len(rw.buf)))); err != nil {
		return err
	}
	_, err = rw.w.Write(rw.buf)
	return err
}

// putJob writes the record of a job with its status filled in.
func (rw *recordWriter) putJob(it jobItem) error {
	setWithStatus(&rw.job, it.job, it.status)
	rw.wrap.Job = &rw.job
	rw.rec.Record = &rw.wrap
	return rw.put(&rw.rec)
}

// Restore replaces all state with the snapshot's. It builds the new state
// aside and swaps it in only once the whole stream has checked out, so a
// failed restore leaves the FSM as it was.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, lastIndex, err := readState(bufio.NewReaderSize(rc, ioBufferSize))
	if err != nil {
		return fmt.Errorf("fsm: restore snapshot: %w", err)
	}
	f.mu.Lock()
	var names []string
	obs := f.observer
	if obs != nil {
		names = unionNames(f.st.jobs, st.jobs)
	}
	f.st = st
	f.lastIndex = lastIndex
	f.mu.Unlock()
	if len(names) > 0 {
		obs.JobsChanged(Origin{Kind: KindRestore}, names) // every job may have changed
	}
	if obs != nil {
		notifyRevoked(obs, Origin{Kind: KindRestore}) // so may every token
	}
	return nil
}

// readState reads a whole snapshot stream and returns the state with the
// highest modify_index it holds.
func readState(r *bufio.Reader) (state, uint64, error) {
	dec := protodelim.UnmarshalOptions{MaxSize: maxRecordSize}
	var h pb.SnapshotHeader
	if err := dec.UnmarshalFrom(r, &h); err != nil {
		return state{}, 0, fmt.Errorf("header: %w", truncated(err))
	}
	if err := checkFormat(&h); err != nil {
		return state{}, 0, err
	}
	if err := checkSnapshotVersion(h.GetClusterVersion()); err != nil {
		return state{}, 0, err
	}
	st := newState()
	st.counter = h.GetFencingCounter()
	st.retired = h.GetRetiredGeneration()
	st.version = max(st.version, h.GetClusterVersion())
	st.tally.read(h.GetRunCounts())
	lastIndex, err := readJobs(r, &st, h.GetJobCount())
	if err != nil {
		return state{}, 0, err
	}
	if err := readTombstones(r, dec, &st, h.GetTombstoneCount()); err != nil {
		return state{}, 0, err
	}
	if err := readRuns(r, dec, &st, h.GetRunCount()); err != nil {
		return state{}, 0, err
	}
	if err := st.cals.readCalendars(r, dec, h.GetCalendarCount()); err != nil {
		return state{}, 0, err
	}
	if err := st.acl.readTokens(r, dec, h.GetAclTokenCount()); err != nil {
		return state{}, 0, err
	}
	st.acl.bootstrapped = h.GetAclBootstrapped()
	if err := readAudit(r, dec, &st.audit, &h); err != nil {
		return state{}, 0, err
	}
	if err := st.secrets.readSecrets(r, dec, h.GetSecretCount()); err != nil {
		return state{}, 0, err
	}
	if err := st.freezes.readFreezes(r, dec, h.GetFreezeCount()); err != nil {
		return state{}, 0, err
	}
	if err := st.alerts.readAlerts(r, dec, &h); err != nil {
		return state{}, 0, err
	}
	if _, err := r.ReadByte(); err != io.EOF {
		if err == nil {
			return state{}, 0, errors.New("data after the last record the header announces")
		}
		return state{}, 0, err
	}
	if err := st.checkLedger(); err != nil {
		return state{}, 0, err
	}
	st.rebuildIndexes()
	st.rebuildUsers()
	st.rebuildHeld()
	st.rebuildAlertIndex()
	return st, lastIndex, nil
}

// checkFormat refuses a snapshot format this build does not read.
func checkFormat(h *pb.SnapshotHeader) error {
	if v := h.GetFormatVersion(); v != formatVersion && v != formatAudit {
		return fmt.Errorf("%w: snapshot has format version %d, this build reads versions %d and %d",
			ErrSnapshotFormat, v, formatVersion, formatAudit)
	}
	return nil
}

func readTombstones(r *bufio.Reader, dec protodelim.UnmarshalOptions, st *state, count uint64) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("tombstone record %d of %d: %w", i+1, count, truncated(err))
		}
		t := rec.GetTombstone()
		name := t.GetName()
		switch {
		case t == nil:
			return fmt.Errorf("record %d of %d tombstones is not a tombstone", i+1, count)
		case name == "":
			return fmt.Errorf("tombstone record %d of %d has no name", i+1, count)
		case i > 0 && name <= prev:
			return fmt.Errorf("tombstone %q follows %q: tombstones must be in strictly increasing name order", name, prev)
		case st.jobs.Has(jobItem{name: name}):
			return fmt.Errorf("tombstone %q names a live job", name)
		}
		prev = name
		st.tombstones.ReplaceOrInsert(tombstone{name: name, generation: t.GetGeneration()})
	}
	return nil
}

// truncated names the usual cause of an EOF before the announced records:
// protodelim reports a clean EOF when the stream ends between records.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("snapshot truncated: %w", io.ErrUnexpectedEOF)
	}
	return err
}

func readRuns(r *bufio.Reader, dec protodelim.UnmarshalOptions, st *state, count uint64) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("run record %d of %d: %w", i+1, count, truncated(err))
		}
		run := rec.GetRun()
		id := run.GetId()
		switch {
		case run == nil:
			return fmt.Errorf("record %d of %d runs is not a run", i+1, count)
		case id == "" || run.GetJob() == "":
			return fmt.Errorf("run record %d of %d has no id or no job", i+1, count)
		case i > 0 && id <= prev:
			return fmt.Errorf("run %q follows %q: runs must be in strictly increasing id order", id, prev)
		case isOpen(run.GetState()) && len(run.GetAttempts()) == 0:
			return fmt.Errorf("run %q is open but has no attempt", id)
		}
		for _, a := range run.GetAttempts() {
			if a.GetToken() > st.counter {
				return fmt.Errorf("run %q carries token %d above the fencing counter %d", id, a.GetToken(), st.counter)
			}
		}
		prev = id
		st.runs.ReplaceOrInsert(runItem{id: id, run: run})
	}
	return nil
}

// checkLedger checks that every job's open runs exist, are open and are the
// job's, once jobs and runs are both read.
func (s *state) checkLedger() error {
	var err error
	s.jobs.Ascend(func(it jobItem) bool {
		if it.status.GetLatestToken() > s.counter {
			err = fmt.Errorf("job %q has latest token %d above the fencing counter %d", it.name, it.status.GetLatestToken(), s.counter)
			return false
		}
		ids := it.status.GetOpenRunIds()
		for i, id := range ids {
			r, ok := s.run(id)
			switch {
			case !ok:
				err = fmt.Errorf("job %q lists open run %q, which is not in the snapshot", it.name, id)
			case r.GetJob() != it.name:
				err = fmt.Errorf("job %q lists open run %q of job %q", it.name, id, r.GetJob())
			case !isOpen(r.GetState()):
				err = fmt.Errorf("job %q lists run %q as open, but it is %v", it.name, id, r.GetState())
			case slices.Contains(ids[:i], id):
				err = fmt.Errorf("job %q lists open run %q twice", it.name, id)
			}
			if err != nil {
				return false
			}
		}
		return true
	})
	return err
}

// unionNames is every name in a or b, sorted.
func unionNames(a, b *btree.BTreeG[jobItem]) []string {
	names := make([]string, 0, max(a.Len(), b.Len()))
	for _, t := range []*btree.BTreeG[jobItem]{a, b} {
		t.Ascend(func(it jobItem) bool {
			names = append(names, it.name)
			return true
		})
	}
	slices.Sort(names)
	return slices.Compact(names)
}
