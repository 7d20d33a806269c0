package scheduler

import "time"

const (
	// maxSleep bounds one wait, so a wall-clock jump is noticed within it.
	maxSleep = time.Second
	// fireRetry is the pause after a FireBatch failed to commit.
	fireRetry = 500 * time.Millisecond
)

// loop is the steady state: tick (plan what is due, commit it, dispatch
// it), plan the next wave ahead, sleep until the next due time (at most
// maxSleep), repeat.
func (l *leader) loop() {
	for l.ctx.Err() == nil {
		now := l.s.clock.Now()
		l.drainForgotten()
		worked, ok := l.tick(now)
		if worked {
			if !ok && !l.sleep(fireRetry) {
				return
			}
			continue
		}
		if !l.planAhead(now) {
			l.wait(now)
		}
	}
}

// wait sleeps until the earliest due job (planAheadLead before it, to
// plan it ahead, or the due time of what is planned ahead), a change, a
// trigger, or maxSleep, whichever comes first.
func (l *leader) wait(now time.Time) {
	wake := now.Add(maxSleep)
	if at, ok := l.heap.peek(); ok {
		if l.ahead == nil {
			at = max(at-int64(planAheadLead), now.UnixNano())
		}
		wake = time.Unix(0, min(at, wake.UnixNano()))
	}
	if l.ahead != nil && l.ahead.at.Before(wake) {
		wake = l.ahead.at
	}
	c, stop := l.s.clock.WakeAt(wake)
	defer stop()
	l.idleAt.Store(now.UnixNano())
	defer l.idleAt.Store(0)
	select {
	case <-l.ctx.Done():
	case <-l.s.kick:
	case <-c:
	}
}
