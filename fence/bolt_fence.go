package fence

import (
	"context"

	"go.etcd.io/bbolt"
)

// BoltFence keeps a Guard and a Dedupe in one bbolt file. Its embedded Fence serves the
// middleware and the interceptor; Update is the path with an exactly-once effect.
type BoltFence struct {
	Fence

	db     *bbolt.DB
	guard  *BoltGuard
	dedupe *BoltDedupe
	ownsDB bool
}

// NewBoltFence returns a BoltFence on an open database shared with the caller, who closes
// it. Of the options only WithDedupeCapacity applies.
func NewBoltFence(db *bbolt.DB, opts ...BoltOption) (*BoltFence, error) {
	cfg, err := newBoltConfig(opts)
	if err != nil {
		return nil, err
	}
	return newBoltFence(db, cfg.capacity, false)
}

// OpenBoltFence opens the fence file at path (see OpenBolt); Close closes it.
func OpenBoltFence(path string, opts ...BoltOption) (*BoltFence, error) {
	cfg, err := newBoltConfig(opts)
	if err != nil {
		return nil, err
	}
	db, err := openBolt(path, cfg)
	if err != nil {
		return nil, err
	}
	f, err := newBoltFence(db, cfg.capacity, true)
	if err != nil {
		db.Close()
		return nil, err
	}
	return f, nil
}

func newBoltFence(db *bbolt.DB, capacity int, owns bool) (*BoltFence, error) {
	g, err := NewBoltGuard(db)
	if err != nil {
		return nil, err
	}
	d, err := NewBoltDedupe(db, capacity)
	if err != nil {
		return nil, err
	}
	return &BoltFence{Fence: Fence{Guard: g, Dedupe: d}, db: db, guard: g, dedupe: d, ownsDB: owns}, nil
}

// DB returns the database, for the service's own reads.
func (f *BoltFence) DB() *bbolt.DB { return f.db }

// Close closes the file if OpenBoltFence opened it.
func (f *BoltFence) Close() error {
	if !f.ownsDB {
		return nil
	}
	return f.db.Close()
}

// Update runs write for run in one bbolt transaction together with the fence, in the
// order of Fence.Do: if a higher token was admitted for scope ("" means run.Job) it returns
// a *StaleError; if run's idempotency key is recorded it returns ErrDuplicate (and keeps
// the token admitted); otherwise it admits the token, calls write, and records the key.
// Should write fail, nothing is committed: not the token, not the key, not write's own
// changes. So the effect is applied exactly once per key, and never for a stale token.
//
// write runs inside bbolt's single writer: keep it short and do no network I/O in it.
func (f *BoltFence) Update(ctx context.Context, run Run, scope string, write func(tx *bbolt.Tx) error) error {
	if scope == "" {
		scope = run.Job
	}
	if err := checkAdmit(ctx, scope, run.Token); err != nil {
		return err
	}
	if err := checkKey(ctx, run.IdempotencyKey); err != nil {
		return err
	}
	duplicate := false
	err := f.db.Update(func(tx *bbolt.Tx) error {
		if err := f.guard.admitTx(tx, scope, run.Token); err != nil {
			return err
		}
		seen, err := seenTx(tx, run.IdempotencyKey)
		if err != nil {
			return err
		}
		if seen {
			duplicate = true
			return nil // commit the admission alone
		}
		if err := write(tx); err != nil {
			return err
		}
		return recordTx(tx, run.IdempotencyKey, f.dedupe.capacity)
	})
	if err == nil && duplicate {
		return ErrDuplicate
	}
	return err
}
