// Package ledger is a small service that raftcron calls. It appends one entry per run to
// a bbolt file, fenced by the run's token and de-duplicated by its idempotency key in the
// same transaction as the write, and it remembers what it decided about every delivery,
// refused ones included. `raftcron dev` serves it as its demo downstream, the end-to-end
// tests record through it, and examples/ledger is the program that serves it alone.
package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/bbolt"

	"github.com/raftcron/raftcron/fence"
)

// Scope says which writes a newer attempt shuts out (see docs/fencing.md).
type Scope string

const (
	// ScopeJob fences each job's runs against older attempts of the same job.
	ScopeJob Scope = "job"
	// ScopeRun fences the attempts of each run against each other only: for jobs whose
	// runs may overlap and are independent.
	ScopeRun Scope = "run"
)

// ErrScope refuses a scope other than ScopeJob and ScopeRun.
var ErrScope = errors.New(`scope must be "job" or "run"`)

// ParseScope checks a scope given as text.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(s); sc {
	case ScopeJob, ScopeRun:
		return sc, nil
	}
	return "", fmt.Errorf("%w, got %q", ErrScope, s)
}

// bucketEntries holds seq (8 bytes, big-endian) -> Entry as JSON, next to fence's own
// bucket in the same file.
var bucketEntries = []byte("ledger.entries")

// Entry is one applied run: what arrived, and when.
type Entry struct {
	Seq         uint64    `json:"seq"`
	Job         string    `json:"job"`
	RunID       string    `json:"run_id"`
	Token       uint64    `json:"token"`
	Attempt     uint32    `json:"attempt"`
	ScheduledAt time.Time `json:"scheduled_at"`
	ReceivedAt  time.Time `json:"received_at"`
	BodySHA256  string    `json:"body_sha256"`
}

// Ledger is the durable list of applied runs. Safe for concurrent use: bbolt runs one
// write transaction at a time, and each Append is one.
type Ledger struct {
	fence *fence.BoltFence
	scope Scope
}

// Open opens (creating if needed) the ledger file at path. A file bbolt cannot read
// fails with fence.ErrCorrupt and is left as it is; a file another process holds fails
// with fence.ErrLocked once the open timeout (fence.WithOpenTimeout) has passed.
func Open(path string, scope Scope, opts ...fence.BoltOption) (*Ledger, error) {
	if _, err := ParseScope(string(scope)); err != nil {
		return nil, err
	}
	f, err := fence.OpenBoltFence(path, opts...)
	if err != nil {
		return nil, err
	}
	err = f.DB().Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketEntries)
		return err
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ledger: %s: create bucket %q: %w", path, bucketEntries, err)
	}
	return &Ledger{fence: f, scope: scope}, nil
}

// Close closes the file.
func (l *Ledger) Close() error { return l.fence.Close() }

// Append records one delivery of run. In one bbolt transaction it admits the token for
// the ledger's scope, checks the idempotency key, writes the entry and records the key.
// It returns the entry, or an error and nothing written: a *fence.StaleError (a newer
// attempt was admitted), fence.ErrDuplicate (the run was applied before; its token stays
// admitted), or the store's failure.
func (l *Ledger) Append(ctx context.Context, run fence.Run, body []byte, receivedAt time.Time) (Entry, error) {
	sum := sha256.Sum256(body)
	e := Entry{
		Job: run.Job, RunID: run.RunID, Token: run.Token, Attempt: run.Attempt,
		ScheduledAt: run.ScheduledAt, ReceivedAt: receivedAt.UTC(),
		BodySHA256: hex.EncodeToString(sum[:]),
	}
	err := l.fence.Update(ctx, run, l.scopeOf(run), func(tx *bbolt.Tx) error {
		b, err := entries(tx)
		if err != nil {
			return err
		}
		if e.Seq, err = b.NextSequence(); err != nil {
			return err
		}
		v, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put(seqKey(e.Seq), v)
	})
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// scopeOf is "" for ScopeJob, which fence reads as the job name.
func (l *Ledger) scopeOf(run fence.Run) string {
	if l.scope == ScopeRun {
		return run.IdempotencyKey
	}
	return ""
}

// Entries returns the entries after seq after, oldest first; job "" means every job.
func (l *Ledger) Entries(job string, after uint64) ([]Entry, error) {
	list := []Entry{}
	if after == math.MaxUint64 {
		return list, nil
	}
	err := l.fence.DB().View(func(tx *bbolt.Tx) error {
		b, err := entries(tx)
		if err != nil {
			return err
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
			var e Entry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("%w: ledger entry %x: %v", fence.ErrCorrupt, k, err)
			}
			if job == "" || e.Job == job {
				list = append(list, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

func entries(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	b := tx.Bucket(bucketEntries)
	if b == nil {
		return nil, fmt.Errorf("%w: bucket %q is missing", fence.ErrCorrupt, bucketEntries)
	}
	return b, nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
