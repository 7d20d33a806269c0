package scheduler

import (
	"slices"
	"testing"
)

func TestDueHeap(t *testing.T) {
	h := newDueHeap(0)
	h.set("c", 30)
	h.set("a", 10)
	h.set("b", 20)
	h.set("d", 5)
	h.set("d", 40) // moves, never duplicates
	h.remove("b")
	h.remove("nope")
	if h.len() != 3 {
		t.Fatalf("len %d, want 3", h.len())
	}
	if at, ok := h.peek(); !ok || at != 10 {
		t.Fatalf("peek = %d, want 10", at)
	}
	if got := h.popDue(30, nil); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("popDue(30) = %v, want [a c]", got)
	}
	h.set("a", 40)
	if got := h.popDue(100, nil); !slices.Equal(got, []string{"a", "d"}) {
		t.Fatalf("popDue(100) = %v, want [a d] (ties by name)", got)
	}
	if _, ok := h.peek(); ok || len(h.byJob) != 0 {
		t.Fatal("heap not empty")
	}
	for i, name := range []string{"z", "y", "x"} {
		h.add(name, int64(3-i))
	}
	h.init()
	if got := h.popDue(10, nil); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("after add+init popDue = %v, want [x y z]", got)
	}
}
