package fence

import (
	"context"
	"path/filepath"
	"testing"
)

func BenchmarkMemoryGuardAdmit(b *testing.B) {
	ctx := context.Background()
	g := NewMemoryGuard()
	var token uint64
	for b.Loop() {
		token++
		if err := g.Admit(ctx, "job", token); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBoltGuardAdmit measures the durable guard as shipped: one fsync'd bbolt
// transaction per admission.
func BenchmarkBoltGuardAdmit(b *testing.B) {
	ctx := context.Background()
	g, err := OpenBoltGuard(filepath.Join(b.TempDir(), "fence.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	var token uint64
	for b.Loop() {
		token++
		if err := g.Admit(ctx, "job", token); err != nil {
			b.Fatal(err)
		}
	}
}
