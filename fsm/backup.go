package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// What backups need from the snapshot stream: a summary that checks as
// much as Restore does, and the two rewrites a restore into a running
// cluster makes. Both rewrites keep every record they do not need to
// change byte for byte, records of kinds this build does not know included.

// SnapshotSummary counts what a snapshot stream holds.
type SnapshotSummary struct {
	FormatVersion  uint32
	FencingCounter uint64
	Jobs           int
	Tombstones     int
	Runs           int
	OpenRuns       int
	// ACLBootstrapped: ACLs were bootstrapped when the snapshot was taken.
	ACLBootstrapped bool
}

// InspectSnapshot reads a whole snapshot stream with every check Restore
// makes and summarizes it: a stream it accepts, Restore accepts. It holds
// the decoded state while it counts, as Restore would, then drops it.
func InspectSnapshot(r io.Reader) (SnapshotSummary, error) {
	st, _, err := readState(bufio.NewReaderSize(r, ioBufferSize))
	if err != nil {
		return SnapshotSummary{}, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return SnapshotSummary{
		FormatVersion:   st.audit.format(),
		FencingCounter:  st.counter,
		Jobs:            st.jobs.Len(),
		Tombstones:      st.tombstones.Len(),
		Runs:            st.runs.Len(),
		OpenRuns:        st.ix.open.Len(),
		ACLBootstrapped: st.acl.bootstrapped,
	}, nil
}

// OrphanDispatched copies the snapshot stream src to dst with the term of
// every DISPATCHED run's current attempt set to 0, and says where in dst
// the header and the ledger end, for UserRestore.
//
// A snapshot restored into a running cluster comes from another time, and
// perhaps another cluster, whose terms mean nothing here: an attempt
// stamped with the current term would look like one the leader has in hand
// (and never be re-dispatched), one stamped with a later term would never
// count as an orphan at all. Term 0 is before every term, so the leader
// treats every run the snapshot shows in flight as an orphan: re-dispatched
// with a new token (at_least_once) or marked unknown (at_most_once).
func OrphanDispatched(dst io.Writer, src io.Reader) (Layout, error) {
	br := bufio.NewReaderSize(src, ioBufferSize)
	bw := bufio.NewWriterSize(dst, ioBufferSize)
	var l Layout
	var written int64
	registry := uint64(0) // records of the registry and the ledger still to come
	for first := true; ; first = false {
		raw, payload, err := readRawRecord(br)
		if err == io.EOF && !first {
			return l, bw.Flush()
		}
		if err != nil {
			return l, fmt.Errorf("fsm: snapshot: %w", truncated(err))
		}
		if first {
			var h pb.SnapshotHeader
			if err := proto.Unmarshal(payload, &h); err != nil {
				return l, fmt.Errorf("fsm: snapshot header does not decode: %w", err)
			}
			registry = h.GetJobCount() + h.GetTombstoneCount() + h.GetRunCount() + h.GetCalendarCount()
		} else if raw, err = orphanRecord(raw, payload); err != nil {
			return l, err
		}
		if _, err := bw.Write(raw); err != nil {
			return l, err
		}
		written += int64(len(raw))
		switch {
		case first:
			l.HeaderEnd, l.RegistryEnd = written, written
		case registry > 0:
			registry--
			l.RegistryEnd = written
		}
	}
}

// orphanRecord returns the record re-encoded with its run's current
// attempt at term 0 if it is a DISPATCHED run's, else raw unchanged.
func orphanRecord(raw, payload []byte) ([]byte, error) {
	var rec pb.SnapshotRecord
	if err := proto.Unmarshal(payload, &rec); err != nil {
		return nil, fmt.Errorf("fsm: snapshot: record does not decode: %w", err)
	}
	run := rec.GetRun()
	cur := CurrentAttempt(run)
	if run.GetState() != pb.RunState_RUN_STATE_DISPATCHED || cur == nil || cur.GetTerm() == 0 {
		return raw, nil
	}
	run.Attempts[len(run.Attempts)-1].Term = 0
	var buf bytes.Buffer
	if _, err := snapshotEncoder.MarshalTo(&buf, &rec); err != nil {
		return nil, fmt.Errorf("fsm: snapshot: run %q: %w", run.GetId(), err)
	}
	return buf.Bytes(), nil
}

// WithCounterFloor returns the snapshot stream r with the fencing counter
// of its header raised to at least floor, and how many bytes longer the
// stream gets (a larger counter may need a longer varint). It reads only
// the header before it returns; the rest streams through.
func WithCounterFloor(r io.Reader, floor uint64) (io.Reader, int64, error) {
	br := bufio.NewReaderSize(r, ioBufferSize)
	raw, payload, err := readRawRecord(br)
	if err != nil {
		return nil, 0, fmt.Errorf("fsm: snapshot header: %w", truncated(err))
	}
	var h pb.SnapshotHeader
	if err := proto.Unmarshal(payload, &h); err != nil {
		return nil, 0, fmt.Errorf("fsm: snapshot header does not decode: %w", err)
	}
	if err := checkFormat(&h); err != nil {
		return nil, 0, err
	}
	h.FencingCounter = max(h.GetFencingCounter(), floor)
	var buf bytes.Buffer
	if _, err := snapshotEncoder.MarshalTo(&buf, &h); err != nil {
		return nil, 0, fmt.Errorf("fsm: snapshot header: %w", err)
	}
	return io.MultiReader(&buf, br), int64(buf.Len() - len(raw)), nil
}

var snapshotEncoder = protodelim.MarshalOptions{MarshalOptions: proto.MarshalOptions{Deterministic: true}}

// readRawRecord reads one length-delimited record and returns it whole
// (length prefix included) and its payload. io.EOF: the stream ended
// cleanly before a record.
func readRawRecord(br *bufio.Reader) (raw, payload []byte, err error) {
	size, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, nil, err
	}
	if size > maxRecordSize {
		return nil, nil, fmt.Errorf("record of %d bytes exceeds the %d-byte limit", size, maxRecordSize)
	}
	prefix := protowire.SizeVarint(size)
	raw = make([]byte, prefix+int(size))
	binary.PutUvarint(raw, size)
	if _, err := io.ReadFull(br, raw[prefix:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	return raw, raw[prefix:], nil
}
