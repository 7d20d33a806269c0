// Package collect runs the garbage collector ahead of a burst of
// allocation the caller knows is coming, so that the collection happens
// in the quiet before it rather than in the middle of it.
//
// A leader's wave of fires allocates several times a small registry's live
// heap (the FSM's runs, the proposals, the hand-over, the offers). When
// the heap is already near its goal as the wave starts, the collector
// starts inside the wave: its mark work and the assists it charges every
// allocating goroutine take CPU from the fires the wave is waiting for.
package collect

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
)

const (
	metricGoal = "/gc/heap/goal:bytes"
	metricHeap = "/memory/classes/heap/objects:bytes"
)

// running is set while a collection started by Ahead has not finished.
var running atomic.Bool

// Ahead starts a collection in the background when the heap cannot grow
// by need bytes before reaching its goal (so a collection would start
// while they are allocated), unless one Ahead started is still running.
// It reports whether it started one, and never blocks.
func Ahead(need uint64) bool {
	if need == 0 || headroom() >= need || !running.CompareAndSwap(false, true) {
		return false
	}
	go func() {
		defer running.Store(false)
		runtime.GC()
	}()
	return true
}

// headroom is how far the heap may grow before the collector starts: the
// heap goal (GOGC's, or the memory limit's when lower) minus the bytes
// the heap's objects take now, live or not yet swept.
func headroom() uint64 {
	s := []metrics.Sample{{Name: metricGoal}, {Name: metricHeap}}
	metrics.Read(s)
	goal, heap := s[0].Value.Uint64(), s[1].Value.Uint64()
	if heap >= goal {
		return 0
	}
	return goal - heap
}
