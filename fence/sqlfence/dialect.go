package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/raftcron/raftcron/fence"
)

// Dialect is the SQL of one database: Postgres, MySQL (MariaDB too) or SQLite.
type Dialect struct {
	name      string
	create    []string
	seed      string // the scope's row, token 0, if it has none; (scope)
	update    string // (token, scope); conditional on token <= it, unless lockRead is set
	lockRead  string // (scope): the token under a row lock, compared before update
	record    string // the key's row unless it exists; (key, token); 0 rows: duplicate
	highest   string // (scope)
	isolation sql.IsolationLevel
}

func (d *Dialect) String() string { return d.name }

// Postgres is PostgreSQL (any driver: pgx's stdlib, lib/pq). Update runs at READ
// COMMITTED, where an UPDATE blocked by another delivery's lock re-reads the row once
// that one commits and re-evaluates its condition against the new token.
var Postgres = &Dialect{
	name: "postgres",
	create: []string{
		`CREATE TABLE IF NOT EXISTS raftcron_fences (
	scope TEXT PRIMARY KEY,
	token BIGINT NOT NULL
)`,
		`CREATE TABLE IF NOT EXISTS raftcron_applied_runs (
	idempotency_key TEXT PRIMARY KEY,
	token BIGINT NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`,
	},
	seed:      `INSERT INTO raftcron_fences (scope, token) VALUES ($1, 0) ON CONFLICT (scope) DO NOTHING`,
	update:    `UPDATE raftcron_fences SET token = $1 WHERE scope = $2 AND token <= $1`,
	record:    `INSERT INTO raftcron_applied_runs (idempotency_key, token) VALUES ($1, $2) ON CONFLICT (idempotency_key) DO NOTHING`,
	highest:   `SELECT token FROM raftcron_fences WHERE scope = $1`,
	isolation: sql.LevelReadCommitted,
}

// SQLite runs one writer at a time. Update's first statement is a write, so its
// transaction takes the write lock before it reads anything (what BEGIN IMMEDIATE does);
// open the database with a busy timeout (modernc.org/sqlite:
// "?_pragma=busy_timeout(5000)", mattn/go-sqlite3: "?_busy_timeout=5000"), or a
// delivery that finds the lock taken fails at once with SQLITE_BUSY.
var SQLite = &Dialect{
	name: "sqlite",
	create: []string{
		`CREATE TABLE IF NOT EXISTS raftcron_fences (
	scope TEXT PRIMARY KEY,
	token INTEGER NOT NULL
)`,
		`CREATE TABLE IF NOT EXISTS raftcron_applied_runs (
	idempotency_key TEXT PRIMARY KEY,
	token INTEGER NOT NULL,
	applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)`,
	},
	seed:    `INSERT INTO raftcron_fences (scope, token) VALUES (?, 0) ON CONFLICT (scope) DO NOTHING`,
	update:  `UPDATE raftcron_fences SET token = ?1 WHERE scope = ?2 AND token <= ?1`,
	record:  `INSERT INTO raftcron_applied_runs (idempotency_key, token) VALUES (?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
	highest: `SELECT token FROM raftcron_fences WHERE scope = ?`,
}

// MySQL is MySQL or MariaDB with InnoDB (go-sql-driver/mysql). Keys and scopes are
// VARBINARY, so that they compare byte for byte: a case-insensitive or PAD SPACE
// collation would take two keys for one. The token is read with SELECT ... FOR UPDATE
// (a locking read sees the latest committed row at any isolation level) and compared in
// the transaction, so Update does not depend on the CLIENT_FOUND_ROWS flag (without it,
// an UPDATE that sets the same token reports 0 rows, which would look stale).
var MySQL = &Dialect{
	name: "mysql",
	create: []string{
		`CREATE TABLE IF NOT EXISTS raftcron_fences (
	scope VARBINARY(256) NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL
) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS raftcron_applied_runs (
	idempotency_key VARBINARY(256) NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL,
	applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB`,
	},
	// ON DUPLICATE KEY UPDATE takes an exclusive lock on an existing row, where INSERT
	// IGNORE would take a shared one that two deliveries then both try to upgrade: a
	// deadlock.
	seed:     `INSERT INTO raftcron_fences (scope, token) VALUES (?, 0) ON DUPLICATE KEY UPDATE token = token`,
	lockRead: `SELECT token FROM raftcron_fences WHERE scope = ? FOR UPDATE`,
	update:   `UPDATE raftcron_fences SET token = ? WHERE scope = ?`,
	// IGNORE turns only the duplicate key into "0 rows" here: Update has checked the
	// key's length, and the row has no other constraint to break.
	record:  `INSERT IGNORE INTO raftcron_applied_runs (idempotency_key, token) VALUES (?, ?)`,
	highest: `SELECT token FROM raftcron_fences WHERE scope = ?`,
}

// advance admits token for scope in tx, making the scope's row first if it has none: a
// conditional UPDATE (it locks the row; 0 rows matched means a higher token is there),
// or with lockRead a locking read, a comparison and an UPDATE.
func (d *Dialect) advance(ctx context.Context, tx *sql.Tx, scope string, token int64) error {
	if _, err := tx.ExecContext(ctx, d.seed, scope); err != nil {
		return fmt.Errorf("sqlfence: seed the scope's row: %w", err)
	}
	if d.lockRead != "" {
		return d.lockingAdvance(ctx, tx, scope, token)
	}
	res, err := tx.ExecContext(ctx, d.update, token, scope)
	if err != nil {
		return fmt.Errorf("sqlfence: advance the token: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlfence: advance the token: %w", err)
	}
	if n == 1 {
		return nil
	}
	var h int64
	if err := tx.QueryRowContext(ctx, d.highest, scope).Scan(&h); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlfence: read the token: %w", err)
	}
	return &fence.StaleError{Scope: scope, Token: uint64(token), Highest: uint64(h)}
}

func (d *Dialect) lockingAdvance(ctx context.Context, tx *sql.Tx, scope string, token int64) error {
	var h int64
	if err := tx.QueryRowContext(ctx, d.lockRead, scope).Scan(&h); err != nil {
		return fmt.Errorf("sqlfence: read the token: %w", err)
	}
	switch {
	case token < h:
		return &fence.StaleError{Scope: scope, Token: uint64(token), Highest: uint64(h)}
	case token == h:
		return nil
	}
	if _, err := tx.ExecContext(ctx, d.update, token, scope); err != nil {
		return fmt.Errorf("sqlfence: advance the token: %w", err)
	}
	return nil
}
