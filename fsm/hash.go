package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"google.golang.org/protobuf/proto"
)

// StateHash is a SHA-256 over a deterministic encoding of all replicated
// state: the counter and the retired generation, then every job and its
// status in name order, then every tombstone in name order, then every run in
// id order, then the ACL state when there is any, then the audit trail if it
// is on, then the run tally if it holds counts, then the secrets (sealed)
// if there are any, then the calendars and the freezes if there are any,
// then the alert section if it ever held anything. The derived indexes are
// functions of the runs and need no place of their own. Nodes that applied
// the same log have equal hashes.
func (f *FSM) StateHash() [32]byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.hash()
}

func (s *state) hash() [32]byte {
	h := sha256.New()
	m := marshaler{h: h}
	writeUint(h, s.counter)
	writeUint(h, s.retired)
	writeUint(h, uint64(s.jobs.Len()))
	s.jobs.Ascend(func(it jobItem) bool {
		m.write(it.job, "job", it.name)
		m.write(it.status, "status", it.name)
		return true
	})
	writeUint(h, uint64(s.tombstones.Len()))
	s.tombstones.Ascend(func(t tombstone) bool {
		writeBytes(h, []byte(t.name))
		writeUint(h, t.generation)
		return true
	})
	writeUint(h, uint64(s.runs.Len()))
	s.runs.Ascend(func(it runItem) bool {
		m.write(it.run, "run", it.id)
		return true
	})
	s.acl.hashTokens(h, &m)
	s.audit.hash(h, &m)
	if v := s.headerVersion(); v != 0 {
		writeUint(h, uint64(v)) // only above 1, so earlier states hash as before
	}
	s.tally.hash(h)
	s.secrets.hash(h, &m)
	s.hashCalendars(h, &m)
	s.alerts.hash(h, &m)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// marshaler writes messages into a hash through one reused buffer.
type marshaler struct {
	h   hash.Hash
	buf []byte
}

func (m *marshaler) write(msg proto.Message, kind, key string) {
	var err error
	m.buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(m.buf[:0], msg)
	if err != nil {
		// Stored values came from decoded commands or snapshots, so they
		// always marshal; mark the impossible case rather than hide it.
		m.buf = append(m.buf[:0], "unmarshalable "+kind+" "+key...)
	}
	writeBytes(m.h, m.buf)
}

// Lengths are written before variable-size fields so that no two different
// states encode to the same bytes.
func writeBytes(h hash.Hash, b []byte) {
	writeUint(h, uint64(len(b)))
	h.Write(b)
}

func writeUint(h hash.Hash, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	h.Write(b[:])
}
