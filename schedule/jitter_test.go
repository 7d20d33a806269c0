package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"testing"
	"time"
)

// The derivation is a contract: a delay recorded in a run must be the one
// any leader computes for that slot. These values are pinned.
func TestJitterPinned(t *testing.T) {
	t.Parallel()
	slot := mustTime(t, "2026-05-01T00:00:00Z")
	tests := []struct {
		job  string
		slot time.Time
		max  time.Duration
		want time.Duration
	}{
		{"billing", slot, 30 * time.Second, 19495 * time.Millisecond},
		{"billing", slot.Add(time.Minute), 30 * time.Second, 13761 * time.Millisecond},
		{"reports", slot, 30 * time.Second, 23326 * time.Millisecond},
		{"billing", slot, time.Hour, 38*time.Minute + 59413*time.Millisecond},
	}
	for _, tc := range tests {
		if got := Jitter(tc.job, tc.slot, tc.max); got != tc.want {
			t.Errorf("Jitter(%q, %s, %s) = %s, want %s", tc.job, tc.slot, tc.max, got, tc.want)
		}
		if got := jitterByTheBook(tc.job, tc.slot, tc.max); got != tc.want {
			t.Errorf("the documented derivation gives %s for (%q, %s, %s), want %s", got, tc.job, tc.slot, tc.max, tc.want)
		}
	}
}

// jitterByTheBook follows Jitter's documented derivation with big
// integers: floor(h × n / 2^64) milliseconds, h the hash's first 8 bytes.
func jitterByTheBook(job string, slot time.Time, max time.Duration) time.Duration {
	var sec [8]byte
	binary.BigEndian.PutUint64(sec[:], uint64(slot.Unix()))
	sum := sha256.Sum256(append(append([]byte(job), 0), sec[:]...))
	h := new(big.Int).SetBytes(sum[:8])
	k := h.Mul(h, big.NewInt(int64(max/time.Millisecond)))
	k.Rsh(k, 64)
	return time.Duration(k.Int64()) * time.Millisecond
}

func TestJitterRange(t *testing.T) {
	t.Parallel()
	start := mustTime(t, "2026-05-01T00:00:00Z")
	const slots, bins = 20000, 10
	max := 30 * time.Second
	var count [bins]int
	for i := range slots {
		d := Jitter("billing", start.Add(time.Duration(i)*time.Minute), max)
		if d < 0 || d >= max || d%time.Millisecond != 0 {
			t.Fatalf("slot %d: jitter %s, want whole milliseconds in [0, %s)", i, d, max)
		}
		count[d*bins/max]++
	}
	// Spread evenly: each tenth of the window within 10% of its share
	// (the inputs are fixed, so this is not a chance outcome).
	for i, c := range count {
		if c < slots/bins*9/10 || c > slots/bins*11/10 {
			t.Errorf("tenth %d of the window holds %d of %d delays: %v", i, c, slots, count)
		}
	}
}

func TestJitterDependsOnJobAndSlotOnly(t *testing.T) {
	t.Parallel()
	slot := mustTime(t, "2026-05-01T00:00:00Z")
	berlin := slot.In(mustLoc(t, "Europe/Berlin"))
	if a, b := Jitter("billing", slot, time.Minute), Jitter("billing", berlin.Add(400*time.Millisecond), time.Minute); a != b {
		t.Errorf("the same second in another zone or with a fraction: %s and %s", a, b)
	}
	if a, b := Jitter("billing", slot, time.Minute), Jitter("billinh", slot, time.Minute); a == b {
		t.Errorf("two jobs share a delay: %s", a)
	}
	for _, max := range []time.Duration{0, -time.Second, 999 * time.Microsecond} {
		if d := Jitter("billing", slot, max); d != 0 {
			t.Errorf("Jitter with max %s = %s, want 0", max, d)
		}
	}
	if d := Jitter("billing", slot, 1500*time.Microsecond); d != 0 {
		t.Errorf("Jitter with max 1.5ms = %s, want 0 (whole milliseconds below max)", d)
	}
}
