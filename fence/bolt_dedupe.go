package fence

import (
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
)

// BoltDedupe is a Dedupe kept in a bbolt file, bounded by count like MemoryDedupe: each
// recorded key gets the next sequence number in an order bucket, and once more than
// capacity keys are kept the lowest sequences are dropped. Sequences are contiguous (only
// the oldest are ever deleted, and a rolled-back transaction rolls its sequence back too),
// so the count is last - first + 1 and needs no counter of its own.
type BoltDedupe struct {
	db       *bbolt.DB
	capacity int
}

// NewBoltDedupe returns a Dedupe on an open database, remembering up to capacity keys (0
// or less means DefaultDedupeCapacity). Opening with a smaller capacity than before drops
// the excess oldest keys at the next Record.
func NewBoltDedupe(db *bbolt.DB, capacity int) (*BoltDedupe, error) {
	if capacity <= 0 {
		capacity = DefaultDedupeCapacity
	}
	if err := db.Update(createBuckets); err != nil {
		return nil, err
	}
	return &BoltDedupe{db: db, capacity: capacity}, nil
}

// Seen implements Dedupe.
func (d *BoltDedupe) Seen(ctx context.Context, key string) (bool, error) {
	if err := checkKey(ctx, key); err != nil {
		return false, err
	}
	var seen bool
	err := d.db.View(func(tx *bbolt.Tx) error {
		var err error
		seen, err = seenTx(tx, key)
		return err
	})
	return seen, err
}

// Record implements Dedupe.
func (d *BoltDedupe) Record(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	return d.db.Update(func(tx *bbolt.Tx) error { return recordTx(tx, key, d.capacity) })
}

// Len returns how many keys are remembered.
func (d *BoltDedupe) Len() (int, error) {
	var n int
	err := d.db.View(func(tx *bbolt.Tx) error {
		order, err := bucket(tx, bucketDedupeOrder)
		if err != nil {
			return err
		}
		n = orderLen(order)
		return nil
	})
	return n, err
}

func seenTx(tx *bbolt.Tx, key string) (bool, error) {
	keys, err := bucket(tx, bucketDedupeKeys)
	if err != nil {
		return false, err
	}
	return keys.Get([]byte(key)) != nil, nil
}

func recordTx(tx *bbolt.Tx, key string, capacity int) error {
	keys, err := bucket(tx, bucketDedupeKeys)
	if err != nil {
		return err
	}
	order, err := bucket(tx, bucketDedupeOrder)
	if err != nil {
		return err
	}
	if keys.Get([]byte(key)) != nil {
		return nil
	}
	seq, err := order.NextSequence()
	if err != nil {
		return err
	}
	if err := keys.Put([]byte(key), u64(seq)); err != nil {
		return err
	}
	if err := order.Put(u64(seq), []byte(key)); err != nil {
		return err
	}
	return evictOldest(keys, order, capacity)
}

// evictOldest drops the lowest sequences until at most capacity keys remain. Every pass
// deletes one entry, so the loop ends.
func evictOldest(keys, order *bbolt.Bucket, capacity int) error {
	for orderLen(order) > capacity {
		c := order.Cursor()
		seq, key := c.First()
		if len(seq) != 8 {
			return fmt.Errorf("%w: dedupe sequence is %d bytes, want 8", ErrCorrupt, len(seq))
		}
		if err := keys.Delete(key); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func orderLen(order *bbolt.Bucket) int {
	c := order.Cursor()
	first, _ := c.First()
	last, _ := c.Last()
	if len(first) != 8 || len(last) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(last) - binary.BigEndian.Uint64(first) + 1)
}
