// Package sqlfence fences a service's SQL writes the way fence.BoltFence fences bbolt
// ones: in one transaction it advances the scope's fencing token (refusing a stale one),
// records the run's idempotency key (refusing a redelivery), and runs the caller's write,
// so the write is applied once per key and never for a stale token. It works over
// database/sql with any driver for PostgreSQL, MySQL/MariaDB (InnoDB) or SQLite: the
// caller opens the *sql.DB and names the dialect.
//
// The tables (CreateTables makes them, CheckTables checks them) are the ones the client
// kits under clients/ use, so services in several languages can share them:
//
//	raftcron_fences        (scope, token)                     one row per scope
//	raftcron_applied_runs  (idempotency_key, token, applied_at) one row per applied run
//
// See docs/fencing.md for the statements, isolation levels and dialect notes.
package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/raftcron/raftcron/fence"
)

// MaxScopeLen bounds a scope, like fence.MaxFieldLen bounds the idempotency key: both
// are primary keys, which MySQL needs bounded.
const MaxScopeLen = fence.MaxFieldLen

// ErrMissingTables says the fence tables are not there (or not as CreateTables makes
// them).
var ErrMissingTables = errors.New("sqlfence: fence tables missing")

// Fence fences writes to one database. It is safe for concurrent use.
type Fence struct {
	db        *sql.DB
	d         *Dialect
	isolation sql.IsolationLevel
}

// Option configures New.
type Option func(*Fence)

// WithIsolation sets the isolation level of Update's transactions (default: READ
// COMMITTED on PostgreSQL, the server's default elsewhere). At REPEATABLE READ or
// SERIALIZABLE, PostgreSQL fails a delivery that raced another of its scope with a
// serialization error (SQLSTATE 40001): retry the whole Update then.
func WithIsolation(level sql.IsolationLevel) Option {
	return func(f *Fence) { f.isolation = level }
}

// New returns a Fence over db, which the caller opened with a driver for d.
func New(db *sql.DB, d *Dialect, opts ...Option) *Fence {
	f := &Fence{db: db, d: d, isolation: d.isolation}
	for _, o := range opts {
		o(f)
	}
	return f
}

// CreateTables creates the fence tables if they do not exist.
func (f *Fence) CreateTables(ctx context.Context) error {
	for _, stmt := range f.d.create {
		if _, err := f.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlfence: create tables: %w", err)
		}
	}
	return nil
}

// CheckTables reports ErrMissingTables unless both tables exist with their columns, for
// a service whose tables are made by its own migrations.
func (f *Fence) CheckTables(ctx context.Context) error {
	for _, q := range []string{
		"SELECT scope, token FROM raftcron_fences WHERE 1 = 0",
		"SELECT idempotency_key, token, applied_at FROM raftcron_applied_runs WHERE 1 = 0",
	} {
		rows, err := f.db.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("%w: %v (create them with CreateTables or the statements in docs/fencing.md)", ErrMissingTables, err)
		}
		rows.Close()
	}
	return nil
}

// Update runs write for run in one transaction together with the fence, in the order of
// fence.Fence.Do and fence.BoltFence.Update:
//
//  1. advance the token of scope ("" means run.Job): a lower token than the highest
//     admitted returns a *fence.StaleError (errors.Is(err, fence.ErrStale)) and commits
//     nothing; an equal one is admitted;
//  2. record run's idempotency key: if it is already recorded, commit the admission alone
//     (a newer attempt of a run already applied still shuts out older ones) and return
//     fence.ErrDuplicate without calling write;
//  3. call write with the transaction: its error rolls everything back — token, key and
//     write — and is returned.
//
// So write is applied once per key and never for a stale token. Deliveries of the same
// scope are serialised by the lock on the scope's row; keep write short.
func (f *Fence) Update(ctx context.Context, run fence.Run, scope string, write func(*sql.Tx) error) (err error) {
	if scope == "" {
		scope = run.Job
	}
	if err := check(run, scope); err != nil {
		return err
	}
	tx, err := f.db.BeginTx(ctx, &sql.TxOptions{Isolation: f.isolation})
	if err != nil {
		return fmt.Errorf("sqlfence: begin: %w", err)
	}
	defer func() {
		if err != nil && !errors.Is(err, fence.ErrDuplicate) {
			_ = tx.Rollback()
		}
	}()
	token := int64(run.Token)
	if err := f.d.advance(ctx, tx, scope, token); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, f.d.record, run.IdempotencyKey, token)
	if err != nil {
		return fmt.Errorf("sqlfence: record the idempotency key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlfence: record the idempotency key: %w", err)
	} else if n == 0 {
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlfence: commit the admission of a duplicate: %w", err)
		}
		return fence.ErrDuplicate
	}
	if err := write(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlfence: commit: %w", err)
	}
	return nil
}

// Highest returns the highest token admitted for scope, 0 if none.
func (f *Fence) Highest(ctx context.Context, scope string) (uint64, error) {
	var h int64
	err := f.db.QueryRowContext(ctx, f.d.highest, scope).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlfence: read the token of %q: %w", scope, err)
	}
	return uint64(h), nil
}

// check refuses what the tables cannot hold, before anything is written.
func check(run fence.Run, scope string) error {
	switch {
	case run.Token == 0:
		return fence.ErrZeroToken
	case run.Token > math.MaxInt64:
		return fmt.Errorf("sqlfence: token %d: above 2^63-1, which a BIGINT column cannot hold", run.Token)
	case run.IdempotencyKey == "":
		return fence.ErrEmptyKey
	case len(run.IdempotencyKey) > fence.MaxFieldLen:
		return fmt.Errorf("sqlfence: idempotency key longer than %d bytes", fence.MaxFieldLen)
	case len(scope) > MaxScopeLen:
		return fmt.Errorf("sqlfence: scope longer than %d bytes", MaxScopeLen)
	case !utf8.ValidString(scope) || !utf8.ValidString(run.IdempotencyKey):
		return fmt.Errorf("sqlfence: scope and idempotency key must be UTF-8")
	}
	return nil
}
