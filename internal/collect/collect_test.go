package collect

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// forced is how many collections the program forced so far.
func forced() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitIdle waits until no collection Ahead started is running.
func waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for running.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the collection Ahead started did not finish within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// More than the heap can take before its goal: a collection runs.
func TestAheadCollectsWhenTheHeapCannotTakeWhatComes(t *testing.T) {
	waitIdle(t)
	before := forced()
	if !Ahead(math.MaxUint64) {
		t.Fatal("Ahead started no collection for more than any headroom")
	}
	waitIdle(t)
	if got := forced(); got <= before {
		t.Fatalf("forced collections %d → %d: none ran", before, got)
	}
}

// Within the headroom, or nothing at all: no collection.
func TestAheadLeavesTheHeapAloneWithinItsHeadroom(t *testing.T) {
	waitIdle(t)
	runtime.GC() // the goal is at least 4 MB above what a collection leaves
	for _, need := range []uint64{0, 1} {
		if Ahead(need) {
			t.Errorf("Ahead(%d) started a collection with %d bytes of headroom", need, headroom())
		}
	}
}

// One at a time: a second call while the first runs starts none.
func TestAheadStartsOneCollectionAtATime(t *testing.T) {
	waitIdle(t)
	running.Store(true) // as if a collection Ahead started were under way
	defer running.Store(false)
	if Ahead(math.MaxUint64) {
		t.Fatal("Ahead started a second collection while one ran")
	}
}
