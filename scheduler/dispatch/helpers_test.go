package dispatch

import (
	"testing"
	"time"

	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// receive waits for one value from ch, failing the test after d.
func receive[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("not within %s: %s", d, what)
		var zero T
		return zero
	}
}

var slot = time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)

func httpAttempt(url string) Attempt {
	return Attempt{
		Job: "billing", RunID: "run-7", Token: 42, Number: 2, ScheduledAt: slot,
		HTTP: &pb.HttpTarget{Url: url, Method: "POST"}, // as stored
	}
}

func execAttempt(argv ...string) Attempt {
	return Attempt{
		Job: "prune", RunID: "run-9", Token: 77, Number: 1, ScheduledAt: slot,
		Exec: &pb.ExecTarget{Command: argv},
	}
}

func wantState(t *testing.T, out Outcome, state pb.RunState, detail string) {
	t.Helper()
	if out.State != state || (detail != "" && out.Detail != detail) {
		t.Fatalf("outcome = %v %q, want %v %q", out.State, out.Detail, state, detail)
	}
	if out.StartedAt.IsZero() || out.FinishedAt.Before(out.StartedAt) {
		t.Fatalf("bad times: started %v finished %v", out.StartedAt, out.FinishedAt)
	}
}

// testPrograms is the exec policy of the tests: the programs they run, and the
// missing or unrunnable ones whose failures they check.
var testPrograms = func() *policy.Exec {
	p, err := policy.NewExec([]string{"/bin/*", "/usr/bin/*", "/nonexistent/*", "/etc/passwd"})
	if err != nil {
		panic(err)
	}
	return p
}()

// newTestExec is an exec executor allowed to run testPrograms.
func newTestExec() *ExecExecutor { return NewExecExecutor(ExecConfig{Allow: testPrograms}) }
