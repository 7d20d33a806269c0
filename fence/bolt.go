package fence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultOpenTimeout is how long an open waits for another process to release the file.
const DefaultOpenTimeout = time.Second

var (
	// ErrCorrupt reports a store that is not what fence wrote. It is never reset silently:
	// move the file aside or restore it from a backup.
	ErrCorrupt = errors.New("fence: corrupt store")
	// ErrLocked reports a store file held open by another process (or another open in
	// this one).
	ErrLocked = errors.New("fence: store is locked by another process")
)

// Everything fence keeps in a bbolt file lives under one top-level bucket, so that a
// service can share its own database with it.
var (
	bucketRoot        = []byte("raftcron.fence")
	bucketTokens      = []byte("tokens")       // scope -> highest token, 8 bytes big-endian
	bucketDedupeKeys  = []byte("dedupe.keys")  // idempotency key -> sequence, 8 bytes
	bucketDedupeOrder = []byte("dedupe.order") // sequence, 8 bytes big-endian -> key
)

// BoltOption configures OpenBolt, OpenBoltGuard and OpenBoltFence.
type BoltOption func(*boltConfig)

type boltConfig struct {
	timeout  time.Duration
	capacity int
	err      error
}

// WithOpenTimeout sets how long an open waits for the file lock (default
// DefaultOpenTimeout). It must be positive: waiting forever hides a second process.
func WithOpenTimeout(d time.Duration) BoltOption {
	return func(c *boltConfig) {
		if d <= 0 {
			c.err = fmt.Errorf("fence: open timeout %s: must be positive", d)
			return
		}
		c.timeout = d
	}
}

// WithDedupeCapacity sets how many idempotency keys a BoltFence remembers (default
// DefaultDedupeCapacity). It must be positive.
func WithDedupeCapacity(n int) BoltOption {
	return func(c *boltConfig) {
		if n <= 0 {
			c.err = fmt.Errorf("fence: dedupe capacity %d: must be positive", n)
			return
		}
		c.capacity = n
	}
}

func newBoltConfig(opts []BoltOption) (boltConfig, error) {
	c := boltConfig{timeout: DefaultOpenTimeout, capacity: DefaultDedupeCapacity}
	for _, o := range opts {
		o(&c)
	}
	return c, c.err
}

// OpenBolt opens (creating if needed) a bbolt file for fence, with a lock timeout so that
// a second process fails fast. A file bbolt cannot read is reported as ErrCorrupt and left
// untouched. The caller closes the returned database.
func OpenBolt(path string, opts ...BoltOption) (*bbolt.DB, error) {
	cfg, err := newBoltConfig(opts)
	if err != nil {
		return nil, err
	}
	return openBolt(path, cfg)
}

func openBolt(path string, cfg boltConfig) (*bbolt.DB, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: cfg.timeout})
	if err != nil {
		return nil, openError(path, cfg.timeout, err)
	}
	if err := db.Update(createBuckets); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return db, nil
}

func openError(path string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s (gave up after %s)", ErrLocked, path, timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("%w: %s: %v; the file is left as it is: move it aside "+
			"or restore a backup", ErrCorrupt, path, err)
	}
	return fmt.Errorf("fence: open %s: %w", path, err)
}

// createBuckets makes the layout idempotently; a name already taken by a plain key means
// the file holds something else.
func createBuckets(tx *bbolt.Tx) error {
	root, err := tx.CreateBucketIfNotExists(bucketRoot)
	if err != nil {
		return layoutError(bucketRoot, err)
	}
	for _, name := range [][]byte{bucketTokens, bucketDedupeKeys, bucketDedupeOrder} {
		if _, err := root.CreateBucketIfNotExists(name); err != nil {
			return layoutError(name, err)
		}
	}
	return nil
}

func layoutError(name []byte, err error) error {
	if errors.Is(err, berrors.ErrIncompatibleValue) {
		return fmt.Errorf("%w: %q is a key, not a bucket", ErrCorrupt, name)
	}
	return fmt.Errorf("fence: create bucket %q: %w", name, err)
}

// bucket returns a sub-bucket of the fence root; a missing one means the layout was
// damaged after open.
func bucket(tx *bbolt.Tx, name []byte) (*bbolt.Bucket, error) {
	root := tx.Bucket(bucketRoot)
	if root == nil {
		return nil, fmt.Errorf("%w: bucket %q is missing", ErrCorrupt, bucketRoot)
	}
	b := root.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("%w: bucket %q is missing", ErrCorrupt, name)
	}
	return b, nil
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
