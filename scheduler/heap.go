package scheduler

import "container/heap"

// dueHeap is a min-heap of (wake time, job) with an index by name, so that
// re-planning a job moves its one item instead of adding another. One item
// per job and no timer per job: the loop sleeps until the earliest item.
// It is owned by the leader loop goroutine and not locked.
type dueHeap struct {
	items []*dueItem
	byJob map[string]*dueItem
}

type dueItem struct {
	at    int64 // Unix nanoseconds
	job   string
	index int
}

func newDueHeap(capacity int) *dueHeap {
	return &dueHeap{
		items: make([]*dueItem, 0, capacity),
		byJob: make(map[string]*dueItem, capacity),
	}
}

// set schedules job at at, replacing its earlier item.
func (h *dueHeap) set(job string, at int64) {
	if it, ok := h.byJob[job]; ok {
		it.at = at
		heap.Fix((*dueItems)(h), it.index)
		return
	}
	it := &dueItem{at: at, job: job}
	h.byJob[job] = it
	heap.Push((*dueItems)(h), it)
}

// add appends without restoring the heap order; call init after a run of
// adds. Rebuilding a million items this way is O(n) instead of O(n log n).
func (h *dueHeap) add(job string, at int64) {
	if it, ok := h.byJob[job]; ok {
		it.at = at
		return
	}
	it := &dueItem{at: at, job: job, index: len(h.items)}
	h.byJob[job] = it
	h.items = append(h.items, it)
}

func (h *dueHeap) init() { heap.Init((*dueItems)(h)) }

// when returns job's wake time; ok is false if it has no item.
func (h *dueHeap) when(job string) (at int64, ok bool) {
	if it, ok := h.byJob[job]; ok {
		return it.at, true
	}
	return 0, false
}

// remove drops job's item, if any.
func (h *dueHeap) remove(job string) {
	if it, ok := h.byJob[job]; ok {
		heap.Remove((*dueItems)(h), it.index)
	}
}

// peek returns the earliest item's time; ok is false when empty.
func (h *dueHeap) peek() (at int64, ok bool) {
	if len(h.items) == 0 {
		return 0, false
	}
	return h.items[0].at, true
}

// popDue removes and returns the jobs due at or before now.
func (h *dueHeap) popDue(now int64, into []string) []string {
	return h.popDueUpTo(now, len(h.items), into)
}

// popDueUpTo is popDue for at most max jobs, the earliest first.
func (h *dueHeap) popDueUpTo(now int64, max int, into []string) []string {
	for n := 0; n < max && len(h.items) > 0 && h.items[0].at <= now; n++ {
		it := heap.Pop((*dueItems)(h)).(*dueItem)
		into = append(into, it.job)
	}
	return into
}

func (h *dueHeap) len() int { return len(h.items) }

// dueItems implements heap.Interface; the byJob index follows Push and Pop.
type dueItems dueHeap

func (d *dueItems) Len() int { return len(d.items) }

func (d *dueItems) Less(i, j int) bool {
	a, b := d.items[i], d.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.job < b.job
}

func (d *dueItems) Swap(i, j int) {
	d.items[i], d.items[j] = d.items[j], d.items[i]
	d.items[i].index = i
	d.items[j].index = j
}

func (d *dueItems) Push(x any) {
	it := x.(*dueItem)
	it.index = len(d.items)
	d.items = append(d.items, it)
}

func (d *dueItems) Pop() any {
	n := len(d.items) - 1
	it := d.items[n]
	d.items[n] = nil
	d.items = d.items[:n]
	delete(d.byJob, it.job)
	it.index = -1
	return it
}
