// Package schedtest holds test doubles for the scheduler: a fake clock that
// only moves when told to.
package schedtest

import (
	"sync"
	"time"
)

// Clock is a manual clock. It satisfies scheduler.Clock. The zero value is
// not usable; call NewClock.
type Clock struct {
	mu      sync.Mutex // guards now and waiters
	now     time.Time
	waiters []*waiter
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// WakeAt returns a channel that receives once the clock reads t or later.
func (c *Clock) WakeAt(t time.Time) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &waiter{at: t, c: make(chan time.Time, 1)}
	if !t.After(c.now) {
		w.c <- c.now
		return w.c, func() {}
	}
	c.waiters = append(c.waiters, w)
	return w.c, func() { c.remove(w) }
}

func (c *Clock) remove(w *waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return
		}
	}
}

// Advance moves the clock forward by d (backward if d < 0) and wakes every
// waiter whose time has come.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fire()
	return c.now
}

// Set moves the clock to t, forward or backward (a wall-clock jump).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.fire()
}

// Waiters is the number of callers waiting for a time not reached yet.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

func (c *Clock) fire() {
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.now
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
}
