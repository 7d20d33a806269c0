package scheduler

import (
	"time"

	"github.com/raftcron/raftcron/internal/failpoint"
)

// Clock is the scheduler's only source of time, so that tests run on fake
// time and clock jumps can be staged.
type Clock interface {
	Now() time.Time
	// WakeAt returns a channel that receives once the clock reads t or
	// later, and a stop function releasing it early. Taking an instant
	// rather than a duration means a fake clock advanced between Now and
	// WakeAt still wakes the caller.
	WakeAt(t time.Time) (c <-chan time.Time, stop func())
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now().Add(failpoint.Offset()) }

// WakeAt arms a runtime timer for t.
func (SystemClock) WakeAt(t time.Time) (<-chan time.Time, func()) {
	tm := time.NewTimer(time.Until(t.Add(-failpoint.Offset())))
	return tm.C, func() { tm.Stop() }
}
