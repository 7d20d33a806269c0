package scheduler

import (
	"fmt"
	"testing"
)

// BenchmarkDueHeap measures the leader's due-time heap with n jobs: set
// (re-plan one job: move its entry), and popDue of one job that came due
// followed by its re-insertion, as a tick does for every fired job.
func BenchmarkDueHeap(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("job-%07d", i)
		}
		fill := func() *dueHeap {
			h := newDueHeap(n)
			for i, name := range names {
				h.add(name, int64(i)*1e6) // distinct due times, 1 ms apart
			}
			h.init()
			return h
		}
		b.Run(fmt.Sprintf("set/%d", n), func(b *testing.B) {
			h := fill()
			i := 0
			for b.Loop() {
				h.set(names[i%n], int64(n+i)*1e6)
				i++
			}
		})
		b.Run(fmt.Sprintf("pop+set/%d", n), func(b *testing.B) {
			h := fill()
			into := make([]string, 0, 1)
			next := int64(n)
			for b.Loop() {
				at, _ := h.peek()
				into = h.popDue(at, into[:0])
				for _, name := range into {
					h.set(name, next*1e6)
					next++
				}
			}
		})
	}
}
