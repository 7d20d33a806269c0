package fence

import (
	"context"
	"errors"
	"sync"
)

// DefaultDedupeCapacity is how many idempotency keys a Dedupe remembers unless told
// otherwise. Size it to cover every run that can still be re-delivered: raftcron
// re-delivers an attempt only until the run finishes or its retries run out.
const DefaultDedupeCapacity = 100_000

// ErrEmptyKey refuses an empty idempotency key.
var ErrEmptyKey = errors.New("fence: empty idempotency key")

// Dedupe remembers the idempotency keys of runs whose effect was applied, so that a
// re-delivered run is acknowledged without a second effect. Both implementations are
// bounded: past capacity, the oldest key is forgotten first.
type Dedupe interface {
	Seen(ctx context.Context, key string) (bool, error)
	// Record remembers key; recording a key again changes nothing.
	Record(ctx context.Context, key string) error
}

func checkKey(ctx context.Context, key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	return ctx.Err()
}

// MemoryDedupe is a Dedupe held in memory, bounded by count: keys are forgotten in the
// order they were recorded (FIFO), so a key stays remembered for the next capacity
// recordings whatever else happens. Safe for concurrent use.
type MemoryDedupe struct {
	// mu guards keys and ring; keys holds exactly the non-empty entries of ring.
	mu   sync.Mutex
	keys map[string]struct{}
	ring []string // len == capacity; next is the oldest slot once the ring is full
	next int
}

// NewMemoryDedupe returns a MemoryDedupe remembering up to capacity keys (0 or less means
// DefaultDedupeCapacity).
func NewMemoryDedupe(capacity int) *MemoryDedupe {
	if capacity <= 0 {
		capacity = DefaultDedupeCapacity
	}
	return &MemoryDedupe{keys: map[string]struct{}{}, ring: make([]string, capacity)}
}

// Seen implements Dedupe.
func (d *MemoryDedupe) Seen(ctx context.Context, key string) (bool, error) {
	if err := checkKey(ctx, key); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.keys[key]
	return ok, nil
}

// Record implements Dedupe.
func (d *MemoryDedupe) Record(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.keys[key]; ok {
		return nil
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.keys, old)
	}
	d.ring[d.next] = key
	d.keys[key] = struct{}{}
	d.next = (d.next + 1) % len(d.ring)
	return nil
}

// Len returns how many keys are remembered.
func (d *MemoryDedupe) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys)
}
