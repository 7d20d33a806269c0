package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

var (
	errAgain = errors.New("refused, nothing done")
	errFinal = errors.New("failed")
)

func again(err error) bool { return errors.Is(err, errAgain) }

// Refusals are retried, doubling the wait, until the call succeeds or
// fails otherwise.
func TestRetryUntilTheCallIsNotRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		last  error
		calls int
	}{{"succeeds", nil, 4}, {"fails", errFinal, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var at []time.Time
			err := Retry(t.Context(), time.Millisecond, 4*time.Millisecond, again, func() error {
				calls++
				at = append(at, time.Now())
				if calls < tc.calls {
					return errAgain
				}
				return tc.last
			})
			if !errors.Is(err, tc.last) || (tc.last == nil && err != nil) || calls != tc.calls {
				t.Fatalf("Retry: %v after %d calls, want %v after %d", err, calls, tc.last, tc.calls)
			}
			for i, want := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond} {
				if gap := at[i+1].Sub(at[i]); gap < want {
					t.Fatalf("call %d came %v after the one before, want at least %v", i+2, gap, want)
				}
			}
		})
	}
}

// Refused until the deadline: the refusal is returned, not the deadline.
func TestRetryReturnsTheLastRefusalAtTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	calls := 0
	err := Retry(ctx, time.Millisecond, 10*time.Millisecond, again, func() error { calls++; return errAgain })
	if !errors.Is(err, errAgain) || ctx.Err() == nil || calls < 2 {
		t.Fatalf("Retry: %v after %d calls (context: %v), want the refusal, at the deadline, after retries", err, calls, ctx.Err())
	}
}
