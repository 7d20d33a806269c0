package fence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

func key(i int) string { return fmt.Sprintf("job/%06d", i) }

// checkRemembersLast checks that exactly keys [from, to) are remembered, probing a few
// below from as well.
func checkRemembersLast(t *testing.T, d Dedupe, from, to int) {
	t.Helper()
	ctx := context.Background()
	for i := max(0, from-20); i < to; i++ {
		seen, err := d.Seen(ctx, key(i))
		if err != nil {
			t.Fatalf("Seen(%s): %v", key(i), err)
		}
		if want := i >= from; seen != want {
			t.Fatalf("Seen(%s) = %v, want %v (keys %d..%d should be remembered)", key(i), seen, want, from, to-1)
		}
	}
}

func TestMemoryDedupeStaysBounded(t *testing.T) {
	ctx := context.Background()
	const capacity, extra = 100, 37
	d := NewMemoryDedupe(capacity)
	for i := range capacity + extra {
		if err := d.Record(ctx, key(i)); err != nil {
			t.Fatalf("Record: %v", err)
		}
		if n := d.Len(); n != min(i+1, capacity) {
			t.Fatalf("after %d records Len = %d, want %d", i+1, n, min(i+1, capacity))
		}
	}
	checkRemembersLast(t, d, extra, capacity+extra)

	// Recording a remembered key again must neither grow the set nor refresh the key.
	if err := d.Record(ctx, key(extra)); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(ctx, key(capacity+extra)); err != nil {
		t.Fatal(err)
	}
	if d.Len() != capacity {
		t.Fatalf("Len = %d, want %d", d.Len(), capacity)
	}
	checkRemembersLast(t, d, extra+1, capacity+extra+1)
}

func TestMemoryDedupeDefaultCapacity(t *testing.T) {
	for _, c := range []int{0, -5} {
		if d := NewMemoryDedupe(c); len(d.ring) != DefaultDedupeCapacity {
			t.Fatalf("NewMemoryDedupe(%d) capacity = %d, want %d", c, len(d.ring), DefaultDedupeCapacity)
		}
	}
}

func openTestBoltDedupe(t *testing.T, path string, capacity int) *BoltDedupe {
	t.Helper()
	db, err := OpenBolt(path)
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	db.NoSync = true
	t.Cleanup(func() { db.Close() })
	d, err := NewBoltDedupe(db, capacity)
	if err != nil {
		t.Fatalf("NewBoltDedupe: %v", err)
	}
	return d
}

func boltLen(t *testing.T, d *BoltDedupe) int {
	t.Helper()
	n, err := d.Len()
	if err != nil {
		t.Fatalf("Len: %v", err)
	}
	return n
}

func TestBoltDedupeStaysBoundedAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fence.db")
	const capacity, extra = 50, 23
	d := openTestBoltDedupe(t, path, capacity)
	for i := range capacity + extra {
		if err := d.Record(ctx, key(i)); err != nil {
			t.Fatalf("Record: %v", err)
		}
		if n := boltLen(t, d); n != min(i+1, capacity) {
			t.Fatalf("after %d records Len = %d, want %d", i+1, n, min(i+1, capacity))
		}
	}
	if err := d.Record(ctx, key(capacity+extra-1)); err != nil {
		t.Fatal(err)
	}
	checkRemembersLast(t, d, extra, capacity+extra)
	if err := d.db.Close(); err != nil {
		t.Fatal(err)
	}

	d = openTestBoltDedupe(t, path, capacity)
	checkRemembersLast(t, d, extra, capacity+extra)

	if err := d.db.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTestBoltDedupe(t, path, 10)
	if err := d.Record(ctx, key(capacity+extra)); err != nil {
		t.Fatal(err)
	}
	if n := boltLen(t, d); n != 10 {
		t.Fatalf("after reopening with capacity 10, Len = %d", n)
	}
	checkRemembersLast(t, d, capacity+extra-9, capacity+extra+1)
}

func TestDedupeRefusesEmptyKey(t *testing.T) {
	ctx := context.Background()
	for name, d := range map[string]Dedupe{
		"memory": NewMemoryDedupe(10),
		"bolt":   openTestBoltDedupe(t, filepath.Join(t.TempDir(), "fence.db"), 10),
	} {
		if err := d.Record(ctx, ""); !errors.Is(err, ErrEmptyKey) {
			t.Fatalf("%s Record(\"\") = %v, want ErrEmptyKey", name, err)
		}
		if _, err := d.Seen(ctx, ""); !errors.Is(err, ErrEmptyKey) {
			t.Fatalf("%s Seen(\"\") = %v, want ErrEmptyKey", name, err)
		}
	}
}
