package fence

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestBoltGuardSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fence.db")
	g, err := OpenBoltGuard(path)
	if err != nil {
		t.Fatalf("OpenBoltGuard: %v", err)
	}
	for _, tok := range []uint64{3, 41, 42} {
		if err := g.Admit(ctx, "billing", tok); err != nil {
			t.Fatalf("Admit(%d): %v", tok, err)
		}
	}
	if err := g.Admit(ctx, "report", 7); err != nil {
		t.Fatalf("Admit(report, 7): %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	g, err = OpenBoltGuard(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer g.Close()
	if h, err := g.Highest(ctx, "billing"); err != nil || h != 42 {
		t.Fatalf("Highest(billing) after reopen = %d, %v; want 42", h, err)
	}
	if err := g.Admit(ctx, "billing", 41); !errors.Is(err, ErrStale) {
		t.Fatalf("Admit(41) after reopen = %v, want stale", err)
	}
	if h, err := g.Highest(ctx, "report"); err != nil || h != 7 {
		t.Fatalf("Highest(report) after reopen = %d, %v; want 7", h, err)
	}
}

func TestOpenBoltRefusesCorruptFile(t *testing.T) {
	cases := map[string][]byte{
		"random bytes": randomBytes(64 << 10),
		"short file":   []byte("not a database"),
		"zero pages":   make([]byte, 32<<10),
		"text":         []byte(strings.Repeat("fencing token 42\n", 2000)),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fence.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, open := range []func() error{
				func() error { g, err := OpenBoltGuard(path); closeIf(g, err); return err },
				func() error { f, err := OpenBoltFence(path); closeIf(f, err); return err },
			} {
				err := open()
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("open of a corrupt file = %v, want ErrCorrupt", err)
				}
				if !strings.Contains(err.Error(), path) {
					t.Fatalf("error %q does not name the file", err)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(after, content) {
				t.Fatalf("the corrupt file was changed by the failed open (err %v)", err)
			}
		})
	}
}

func TestOpenBoltRefusesForeignLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket(bucketRoot)
		if err != nil {
			return err
		}
		return b.Put(bucketTokens, []byte("a key where a bucket belongs"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewBoltGuard(db); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewBoltGuard on a foreign layout = %v, want ErrCorrupt", err)
	}
	db.Close()
}

func TestBoltGuardRefusesCorruptToken(t *testing.T) {
	ctx := context.Background()
	g := openTestBoltGuard(t, filepath.Join(t.TempDir(), "fence.db"))
	err := g.db.Update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bucketTokens)
		if err != nil {
			return err
		}
		return b.Put([]byte("job"), []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Admit(ctx, "job", 99); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Admit over a corrupt record = %v, want ErrCorrupt", err)
	}
	if _, err := g.Highest(ctx, "job"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Highest over a corrupt record = %v, want ErrCorrupt (not overwritten)", err)
	}
}

func TestOpenBoltSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	g, err := OpenBoltGuard(path)
	if err != nil {
		t.Fatalf("OpenBoltGuard: %v", err)
	}
	defer g.Close()

	done := make(chan error, 1)
	go func() {
		g2, err := OpenBoltGuard(path, WithOpenTimeout(100*time.Millisecond))
		closeIf(g2, err)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
			t.Fatalf("second open = %v, want ErrLocked naming the file", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("second open of a locked file did not give up")
	}
}

func TestOpenBoltRefusesBadOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	if _, err := OpenBolt(path, WithOpenTimeout(0)); err == nil || !strings.Contains(err.Error(), "open timeout") {
		t.Fatalf("WithOpenTimeout(0) = %v, want an error", err)
	}
	if _, err := OpenBoltFence(path, WithDedupeCapacity(-1)); err == nil || !strings.Contains(err.Error(), "dedupe capacity") {
		t.Fatalf("WithDedupeCapacity(-1) = %v, want an error", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused open created the file (stat: %v)", err)
	}
}

func TestBoltGuardSharesDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := OpenBolt(filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := NewBoltGuard(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Admit(ctx, "job", 5); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	// The guard did not own the database: it must still be usable.
	if h, err := g.Highest(ctx, "job"); err != nil || h != 5 {
		t.Fatalf("Highest after Close of a shared guard = %d, %v; want 5", h, err)
	}
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func closeIf(c interface{ Close() error }, err error) {
	if err == nil {
		c.Close()
	}
}
