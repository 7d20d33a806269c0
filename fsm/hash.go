package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"google.golang.org/protobuf/proto"
)

// StateHash is a SHA-256 over a deterministic encoding of all replicated
// state: the counter, then every job in name order, then every tombstone in
// name order. Nodes that applied the same log have equal hashes.
func (f *FSM) StateHash() [32]byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.hash()
}

func (s *state) hash() [32]byte {
	h := sha256.New()
	writeUint(h, s.counter)
	writeUint(h, uint64(s.jobs.Len()))
	det := proto.MarshalOptions{Deterministic: true}
	var buf []byte
	s.jobs.Ascend(func(e jobEntry) bool {
		var err error
		buf, err = det.MarshalAppend(buf[:0], e.job)
		if err != nil {
			// Stored jobs came from decoded commands or snapshots, so they
			// always marshal; mark the impossible case rather than hide it.
			buf = append(buf[:0], "unmarshalable job "+e.name...)
		}
		writeBytes(h, buf)
		return true
	})
	writeUint(h, uint64(s.tombstones.Len()))
	s.tombstones.Ascend(func(t tombstone) bool {
		writeBytes(h, []byte(t.name))
		writeUint(h, t.generation)
		return true
	})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
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
