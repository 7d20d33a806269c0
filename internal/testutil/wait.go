package testutil

import (
	"testing"
	"time"
)

// maxPoll bounds the pause between two checks of a condition: short enough
// that a test does not idle long after the condition holds, long enough
// that polling a process over HTTP costs little.
const maxPoll = 20 * time.Millisecond

// WaitFor checks cond until it holds, failing the test if timeout passes
// first. The first checks follow each other quickly (a condition about to
// hold costs the test little) and the pause grows to maxPoll. cond runs on
// the test's goroutine and may call t.Fatal itself (a node that exited
// while it was awaited).
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPoll)
	}
}
