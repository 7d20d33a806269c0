package ledger_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

func TestEntriesSurviveRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	first := open(t, path, ledger.ScopeJob)
	first.deliver(t, attempt(5, 1))
	first.deliver(t, runOf("prune", slot, 6, 1))
	before := first.entries(t)
	if err := first.ledger.Close(); err != nil {
		t.Fatal(err)
	}

	second := open(t, path, ledger.ScopeJob)
	if after := second.entries(t); !reflect.DeepEqual(after, before) {
		t.Fatalf("entries after reopen = %+v, want %+v", after, before)
	}
	// The fence and the idempotency keys live in the same file and survive with it.
	if code, reply := second.deliver(t, attempt(7, 2)); code != 200 || reply["status"] != "duplicate" {
		t.Fatalf("re-delivery after reopen = %d %v, want 200 duplicate", code, reply)
	}
	if code, reply := second.deliver(t, attempt(4, 1)); code != 409 || reply["highest"] != float64(7) {
		t.Fatalf("stale token after reopen = %d %v, want 409 with highest 7", code, reply)
	}
	next := attempt(8, 1)
	next.ScheduledAt = slot.Add(24 * time.Hour)
	next.IdempotencyKey = "nightly-billing/" + fence.FormatScheduledAt(next.ScheduledAt)
	if code, reply := second.deliver(t, next); code != 200 || reply["seq"] != float64(3) {
		t.Fatalf("next run after reopen = %d %v, want applied with seq 3", code, reply)
	}
}

func TestOpenRefusesCorruptFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	content := []byte(strings.Repeat("not a bbolt file\n", 1000))
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(path, ledger.ScopeJob)
	if err == nil {
		l.Close()
	}
	if !errors.Is(err, fence.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a corrupt file = %v, want fence.ErrCorrupt naming the file", err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, content) {
		t.Fatalf("the corrupt file was changed by the failed open (read error %v)", err)
	}
}

func TestCorruptEntryIsAnErrorNotASkip(t *testing.T) {
	t.Parallel()
	s := newService(t)
	s.deliver(t, attempt(5, 1))
	s.ledger.Close()
	db, err := fence.OpenBolt(s.path)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("ledger.entries")).Put([]byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte("{garbage"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = open(t, s.path, ledger.ScopeJob)
	if _, err := s.ledger.Entries("", 0); !errors.Is(err, fence.ErrCorrupt) {
		t.Fatalf("Entries over a damaged entry = %v, want fence.ErrCorrupt", err)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	t.Parallel()
	s := newService(t)
	l, err := ledger.Open(s.path, ledger.ScopeJob, fence.WithOpenTimeout(50*time.Millisecond))
	if err == nil {
		l.Close()
	}
	if !errors.Is(err, fence.ErrLocked) {
		t.Fatalf("second Open of a held file = %v, want fence.ErrLocked", err)
	}
}

func TestOpenRefusesUnknownScope(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := ledger.Open(path, "team")
	if err == nil {
		l.Close()
	}
	if !errors.Is(err, ledger.ErrScope) {
		t.Fatalf("Open with scope team = %v, want ErrScope", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Open created the file (stat: %v)", err)
	}
}
