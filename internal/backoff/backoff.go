// Package backoff retries a call that failed without effect (no leader,
// NOT_LEADER: nothing was proposed), waiting longer between attempts,
// until the call's context ends.
package backoff

import (
	"context"
	"time"
)

// Retry calls call until it succeeds, fails with an error again does not
// accept, or ctx ends. It waits first before the second call and twice as
// long before each next one, up to max. It returns call's last error: the
// refusal says more than the context's deadline.
func Retry(ctx context.Context, first, max time.Duration, again func(error) bool, call func() error) error {
	wait := first
	for {
		err := call()
		if err == nil || !again(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, max)
	}
}
