package fence

import (
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
)

// BoltGuard is a Guard kept in a bbolt file: it survives restarts and is safe for
// concurrent use. Each Admit is one bbolt write transaction (one fsync), and bbolt runs
// write transactions one at a time, which is what makes the compare and the store atomic.
type BoltGuard struct {
	db      *bbolt.DB
	ownsDB  bool
	observe func(scope string, token uint64, admitted bool) // tests only; called inside the transaction
}

// NewBoltGuard returns a guard on an open database (opened by OpenBolt, or the service's
// own); it shares the database with the caller, who closes it.
func NewBoltGuard(db *bbolt.DB) (*BoltGuard, error) {
	if err := db.Update(createBuckets); err != nil {
		return nil, err
	}
	return &BoltGuard{db: db}, nil
}

// OpenBoltGuard opens the guard file at path (see OpenBolt); Close closes it.
func OpenBoltGuard(path string, opts ...BoltOption) (*BoltGuard, error) {
	db, err := OpenBolt(path, opts...)
	if err != nil {
		return nil, err
	}
	return &BoltGuard{db: db, ownsDB: true}, nil
}

// Close closes the file if OpenBoltGuard opened it; a guard from NewBoltGuard leaves the
// shared database to its owner.
func (g *BoltGuard) Close() error {
	if !g.ownsDB {
		return nil
	}
	return g.db.Close()
}

// Admit implements Guard.
func (g *BoltGuard) Admit(ctx context.Context, scope string, token uint64) error {
	if err := checkAdmit(ctx, scope, token); err != nil {
		return err
	}
	return g.db.Update(func(tx *bbolt.Tx) error { return g.admitTx(tx, scope, token) })
}

// Highest implements Guard.
func (g *BoltGuard) Highest(ctx context.Context, scope string) (uint64, error) {
	if scope == "" {
		return 0, ErrEmptyScope
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var h uint64
	err := g.db.View(func(tx *bbolt.Tx) error {
		var err error
		h, err = highestTx(tx, scope)
		return err
	})
	return h, err
}

func (g *BoltGuard) admitTx(tx *bbolt.Tx, scope string, token uint64) error {
	h, err := highestTx(tx, scope)
	if err != nil {
		return err
	}
	if g.observe != nil {
		g.observe(scope, token, token >= h)
	}
	if token < h {
		return &StaleError{Scope: scope, Token: token, Highest: h}
	}
	if token == h {
		return nil
	}
	b, err := bucket(tx, bucketTokens)
	if err != nil {
		return err
	}
	return b.Put([]byte(scope), u64(token))
}

func highestTx(tx *bbolt.Tx, scope string) (uint64, error) {
	b, err := bucket(tx, bucketTokens)
	if err != nil {
		return 0, err
	}
	v := b.Get([]byte(scope))
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("%w: token of scope %q is %d bytes, want 8", ErrCorrupt, scope, len(v))
}
