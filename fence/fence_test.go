package fence

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/raftcron/raftcron/internal/testutil"
)

func runWith(token uint64, key string) Run {
	r := sampleRun()
	r.Token = token
	r.IdempotencyKey = key
	return r
}

func TestFenceDo(t *testing.T) {
	ctx := context.Background()
	f := NewFence(NewMemoryGuard(), NewMemoryDedupe(10))
	calls := 0
	effect := func(ctx context.Context) error {
		calls++
		if r, ok := RunFromContext(ctx); !ok || r.Token == 0 {
			t.Errorf("effect context carries no run")
		}
		return nil
	}

	if err := f.Do(ctx, runWith(10, "k1"), "", effect); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if err := f.Do(ctx, runWith(11, "k1"), "", effect); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Do with a recorded key = %v, want ErrDuplicate", err)
	}
	if err := f.Do(ctx, runWith(9, "k2"), "", effect); !errors.Is(err, ErrStale) {
		t.Fatalf("Do with a stale token = %v, want ErrStale", err)
	}
	if calls != 1 {
		t.Fatalf("effect called %d times, want 1", calls)
	}
	// The duplicate's token 11 is a newer attempt of an applied run: it stays admitted.
	if h, _ := f.Guard.Highest(ctx, "nightly-billing"); h != 11 {
		t.Fatalf("Highest under the job name = %d, want 11", h)
	}
	if err := f.Do(ctx, runWith(10, "k1"), "", effect); !errors.Is(err, ErrStale) {
		t.Fatalf("Do with a stale token and a recorded key = %v, want ErrStale (the fence comes first)", err)
	}

	boom := errors.New("boom")
	if err := f.Do(ctx, runWith(12, "k3"), "", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do with a failing effect = %v, want its error", err)
	}
	if seen, _ := f.Dedupe.Seen(ctx, "k3"); seen {
		t.Fatal("a failed effect recorded its key")
	}
	if err := f.Do(ctx, runWith(12, "k3"), "", effect); err != nil || calls != 2 {
		t.Fatalf("retry after a failed effect = %v (calls %d), want applied", err, calls)
	}
}

func TestFenceDoRefusesMisuse(t *testing.T) {
	ctx := context.Background()
	noop := func(context.Context) error { return nil }
	if err := (&Fence{}).Do(ctx, sampleRun(), "", noop); !errors.Is(err, ErrNoGuard) {
		t.Fatalf("Do without a guard = %v", err)
	}
	f := NewFence(NewMemoryGuard(), NewMemoryDedupe(10))
	if err := f.Do(ctx, runWith(5, ""), "", noop); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Do without a key = %v", err)
	}
	if err := f.Do(ctx, runWith(0, "k"), "", noop); !errors.Is(err, ErrZeroToken) {
		t.Fatalf("Do with token 0 = %v", err)
	}
	// Without a Dedupe, a Fence only fences.
	g := NewMemoryGuard()
	f = NewFence(g, nil)
	for range 2 {
		if err := f.Do(ctx, runWith(5, ""), "scope", noop); err != nil {
			t.Fatalf("Do without a Dedupe = %v", err)
		}
	}
	if h, _ := g.Highest(ctx, "scope"); h != 5 {
		t.Fatalf("explicit scope not used: Highest = %d", h)
	}
}

// TestFenceDoSerialisesSameKey delivers one run twice at once: the second delivery must
// wait for the first and then find its key recorded.
func TestFenceDoSerialisesSameKey(t *testing.T) {
	ctx := context.Background()
	f := NewFence(NewMemoryGuard(), NewMemoryDedupe(10))
	var calls atomic.Int32
	release := make(chan struct{})
	effect := func(context.Context) error {
		calls.Add(1)
		<-release
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- f.Do(ctx, runWith(41, "k"), "", effect) }()
	testutil.WaitFor(t, 10*time.Second, "the first delivery to start its effect", func() bool { return calls.Load() == 1 })

	second := make(chan error, 1)
	go func() { second <- f.Do(ctx, runWith(42, "k"), "", effect) }()
	testutil.WaitFor(t, 10*time.Second, "the second delivery to wait on the key", func() bool { return lockRefs(f, "k") == 2 })
	close(release)

	if err := <-first; err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	if err := <-second; !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second delivery = %v, want ErrDuplicate", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("effect applied %d times, want 1", n)
	}
	if n := lockRefs(f, "k"); n != 0 {
		t.Fatalf("key lock still has %d references", n)
	}
}

func lockRefs(f *Fence, key string) int {
	f.locks.mu.Lock()
	defer f.locks.mu.Unlock()
	if e := f.locks.m[key]; e != nil {
		return e.refs
	}
	return 0
}

func TestFenceDoWaiterGivesUpWithContext(t *testing.T) {
	f := NewFence(NewMemoryGuard(), NewMemoryDedupe(10))
	release := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- f.Do(context.Background(), runWith(1, "k"), "", func(context.Context) error { <-release; return nil })
	}()
	testutil.WaitFor(t, 10*time.Second, "the first delivery to hold the key", func() bool { return lockRefs(f, "k") == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- f.Do(ctx, runWith(2, "k"), "", func(context.Context) error { return nil }) }()
	testutil.WaitFor(t, 10*time.Second, "the second delivery to wait", func() bool { return lockRefs(f, "k") == 2 })
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if h, _ := f.Guard.Highest(context.Background(), "nightly-billing"); h != 1 {
		t.Fatalf("the cancelled waiter admitted its token: Highest = %d", h)
	}
}

func TestFenceDoRecordsKeyAfterCancel(t *testing.T) {
	f := NewFence(NewMemoryGuard(), NewMemoryDedupe(10))
	ctx, cancel := context.WithCancel(context.Background())
	err := f.Do(ctx, runWith(1, "k"), "", func(context.Context) error { cancel(); return nil })
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if seen, _ := f.Dedupe.Seen(context.Background(), "k"); !seen {
		t.Fatal("the key of an applied effect was not recorded because the request went away")
	}
}

type failingDedupe struct{ Dedupe }

func (failingDedupe) Record(context.Context, string) error { return errors.New("disk full") }

func TestFenceDoReportsUnrecordedKey(t *testing.T) {
	f := NewFence(NewMemoryGuard(), failingDedupe{NewMemoryDedupe(10)})
	err := f.Do(context.Background(), runWith(1, "k"), "", func(context.Context) error { return nil })
	if !errors.Is(err, ErrUnrecorded) {
		t.Fatalf("Do with a failing Record = %v, want ErrUnrecorded", err)
	}
}

func openTestBoltFence(t *testing.T) *BoltFence {
	t.Helper()
	f, err := OpenBoltFence(filepath.Join(t.TempDir(), "fence.db"), WithDedupeCapacity(100))
	if err != nil {
		t.Fatalf("OpenBoltFence: %v", err)
	}
	f.DB().NoSync = true
	t.Cleanup(func() { f.Close() })
	return f
}

var bucketLedger = []byte("ledger")

func ledgerWrite(value string) func(tx *bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketLedger)
		if err != nil {
			return err
		}
		return b.Put([]byte("entry"), []byte(value))
	}
}

func ledgerEntry(t *testing.T, f *BoltFence) string {
	t.Helper()
	var v string
	f.DB().View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketLedger); b != nil {
			v = string(b.Get([]byte("entry")))
		}
		return nil
	})
	return v
}

func TestBoltFenceUpdate(t *testing.T) {
	ctx := context.Background()
	f := openTestBoltFence(t)
	if err := f.Update(ctx, runWith(42, "k1"), "", ledgerWrite("from 42")); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got := ledgerEntry(t, f); got != "from 42" {
		t.Fatalf("ledger = %q", got)
	}
	called := false
	noteCall := func(*bbolt.Tx) error { called = true; return nil }
	if err := f.Update(ctx, runWith(43, "k1"), "", noteCall); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Update with a recorded key = %v, want ErrDuplicate", err)
	}
	if err := f.Update(ctx, runWith(41, "k2"), "", noteCall); !errors.Is(err, ErrStale) {
		t.Fatalf("Update with a stale token = %v, want ErrStale", err)
	}
	if called {
		t.Fatal("write called for a duplicate or stale run")
	}
	if h, _ := f.Guard.Highest(ctx, "nightly-billing"); h != 43 {
		t.Fatalf("Highest = %d, want 43 (a newer attempt of an applied run stays admitted)", h)
	}
	if got := ledgerEntry(t, f); got != "from 42" {
		t.Fatalf("ledger = %q after a duplicate, want it untouched", got)
	}
	if err := f.Update(ctx, runWith(0, "k3"), "", noteCall); !errors.Is(err, ErrZeroToken) {
		t.Fatalf("Update with token 0 = %v", err)
	}
	if err := f.Update(ctx, runWith(50, ""), "", noteCall); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Update without a key = %v", err)
	}
}

func TestBoltFenceUpdateRollsBackOnWriteError(t *testing.T) {
	ctx := context.Background()
	f := openTestBoltFence(t)
	boom := errors.New("boom")
	err := f.Update(ctx, runWith(7, "k"), "", func(tx *bbolt.Tx) error {
		if err := ledgerWrite("half done")(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the write's error", err)
	}
	if h, _ := f.Guard.Highest(ctx, "nightly-billing"); h != 0 {
		t.Fatalf("token recorded after a rolled-back write: Highest = %d", h)
	}
	if seen, _ := f.Dedupe.Seen(ctx, "k"); seen {
		t.Fatal("key recorded after a rolled-back write")
	}
	if got := ledgerEntry(t, f); got != "" {
		t.Fatalf("the write's own change survived: %q", got)
	}
	if err := f.Update(ctx, runWith(7, "k"), "", ledgerWrite("done")); err != nil {
		t.Fatalf("retry: %v", err)
	}
}

// TestBoltFenceUpdateAppliesOnce delivers one run from many goroutines with different
// tokens: the effect must be applied exactly once.
func TestBoltFenceUpdateAppliesOnce(t *testing.T) {
	ctx := context.Background()
	f := openTestBoltFence(t)
	var wg sync.WaitGroup
	var applied, dup, stale atomic.Int32
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.Update(ctx, runWith(uint64(100+i%5), "k"), "", func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(bucketLedger)
				if err != nil {
					return err
				}
				n, _ := b.NextSequence()
				return b.Put([]byte("entry"), u64(n))
			})
			switch {
			case err == nil:
				applied.Add(1)
			case errors.Is(err, ErrDuplicate):
				dup.Add(1)
			case errors.Is(err, ErrStale):
				stale.Add(1)
			default:
				t.Errorf("Update: %v", err)
			}
		}()
	}
	wg.Wait()
	if applied.Load() != 1 || applied.Load()+dup.Load()+stale.Load() != 32 {
		t.Fatalf("applied %d, duplicate %d, stale %d; want exactly one applied", applied.Load(), dup.Load(), stale.Load())
	}
	var seq uint64
	f.DB().View(func(tx *bbolt.Tx) error { seq = tx.Bucket(bucketLedger).Sequence(); return nil })
	if seq != 1 {
		t.Fatalf("the ledger was written %d times, want 1", seq)
	}
}
