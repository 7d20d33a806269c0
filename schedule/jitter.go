package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"time"
)

// Jitter returns how long to delay the dispatch of job's slot: a whole
// number of milliseconds in [0, max), spread evenly, and a pure function
// of (job, slot's second, max). Every leader, before and after a failover,
// computes the same delay for the same slot, and one job's slots do not
// all land at the same point of the window. A max below one millisecond
// (zero or negative included) yields 0.
//
// The derivation is part of the contract (a delay recorded in a run must
// be reproducible): the first 8 bytes of SHA-256(job, 0x00, slot's Unix
// second as a big-endian int64), read big-endian, scaled onto the
// milliseconds of max by a 64×64-bit multiply keeping the high word.
func Jitter(job string, slot time.Time, max time.Duration) time.Duration {
	if max < time.Millisecond {
		return 0
	}
	n := uint64(max / time.Millisecond)
	buf := make([]byte, 0, len(job)+9)
	buf = append(buf, job...)
	buf = append(buf, 0)
	buf = binary.BigEndian.AppendUint64(buf, uint64(slot.Unix()))
	sum := sha256.Sum256(buf)
	k, _ := bits.Mul64(binary.BigEndian.Uint64(sum[:8]), n)
	return time.Duration(k) * time.Millisecond
}
