package schedtest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	past, _ := c.WakeAt(start)
	select {
	case <-past:
	default:
		t.Fatal("a time already reached must wake at once")
	}
	soon, _ := c.WakeAt(start.Add(time.Second))
	later, stopLater := c.WakeAt(start.Add(time.Minute))
	if c.Waiters() != 2 {
		t.Fatalf("%d waiters, want 2", c.Waiters())
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-soon:
		t.Fatal("woke before its time")
	default:
	}
	c.Advance(time.Millisecond)
	select {
	case got := <-soon:
		if !got.Equal(start.Add(time.Second)) {
			t.Fatalf("woke with %v", got)
		}
	default:
		t.Fatal("did not wake at its time")
	}
	stopLater()
	if c.Waiters() != 0 {
		t.Fatalf("%d waiters after stop, want 0", c.Waiters())
	}
	c.Set(start.Add(-time.Hour))
	if !c.Now().Equal(start.Add(-time.Hour)) {
		t.Fatal("Set did not move the clock back")
	}
	select {
	case <-later:
		t.Fatal("a stopped waiter woke")
	default:
	}
}
