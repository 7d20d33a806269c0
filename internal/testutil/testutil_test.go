package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf and Skip end only the goroutine
// that called them, and say how it ended.
type recorder struct {
	testing.TB
	ended string // "fatal: ..." or "skip: ..."; empty if it returned
	logs  []string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.ended = "skip: " + fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// run calls fn with a recorder on a goroutine of its own.
func run(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	start := time.Now()
	calls := 0
	r := run(t, func(tb testing.TB) {
		WaitFor(tb, 10*time.Second, "the third call", func() bool { calls++; return calls == 3 })
	})
	if r.ended != "" || calls != 3 {
		t.Fatalf("ended %q after %d calls, want a return after 3", r.ended, calls)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("three checks took %s", d)
	}
}

func TestWaitForFailsAtTheDeadline(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := run(t, func(tb testing.TB) {
		WaitFor(tb, 50*time.Millisecond, "nothing", func() bool { return false })
	})
	if !strings.HasPrefix(r.ended, "fatal: timed out after 50ms waiting for nothing") {
		t.Fatalf("ended %q, want a timeout naming what it waited for", r.ended)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %s, want soon after 50ms", d)
	}
}

func TestSkipOrFailFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	if r := run(t, func(tb testing.TB) { SkipOrFail(tb, "no %s here", "strace") }); !strings.HasPrefix(r.ended, "fatal: no strace here") {
		t.Errorf("SkipOrFail under CI ended %q, want a failure", r.ended)
	}
	if r := run(t, func(tb testing.TB) { SkipStepOrFail(tb, "no grpcurl") }); !strings.HasPrefix(r.ended, "fatal: no grpcurl") {
		t.Errorf("SkipStepOrFail under CI ended %q, want a failure", r.ended)
	}
	if r := run(t, func(tb testing.TB) { NeedTool(tb, "no-such-tool-here", "it does not exist") }); !strings.HasPrefix(r.ended, "fatal: no-such-tool-here not found") {
		t.Errorf("NeedTool under CI ended %q, want a failure", r.ended)
	}
}

func TestSkipOrFailSkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	if r := run(t, func(tb testing.TB) { SkipOrFail(tb, "no %s here", "strace") }); r.ended != "skip: no strace here" {
		t.Errorf("SkipOrFail ended %q, want a skip", r.ended)
	}
	r := run(t, func(tb testing.TB) { SkipStepOrFail(tb, "no grpcurl") })
	if r.ended != "" || len(r.logs) != 1 || !strings.Contains(r.logs[0], "no grpcurl") {
		t.Errorf("SkipStepOrFail ended %q with logs %q, want one line and a return", r.ended, r.logs)
	}
	if p := run(t, func(tb testing.TB) { NeedTool(tb, "sh", "") }); p.ended != "" {
		t.Errorf("NeedTool(sh) ended %q, want its path", p.ended)
	}
}
