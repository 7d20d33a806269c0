package dispatch

import (
	"context"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestIdempotencyKeyIsSlotInUTCSeconds(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	a := Attempt{Job: "billing", ScheduledAt: time.Date(2026, 11, 22, 10, 2, 3, 999_000_000, tokyo)}
	if got, want := a.IdempotencyKey(), "billing/2026-11-22T01:02:03Z"; got != want {
		t.Fatalf("key = %q, want %q", got, want)
	}
	b := a
	b.Token, b.Number, b.RunID = 99, 3, "other"
	if b.IdempotencyKey() != a.IdempotencyKey() {
		t.Fatalf("key differs between attempts of one slot: %q vs %q", a.IdempotencyKey(), b.IdempotencyKey())
	}
}

type fixedExecutor struct{ name string }

func (f fixedExecutor) Execute(context.Context, Attempt) Outcome {
	return Outcome{State: pb.RunState_RUN_STATE_SUCCEEDED, Detail: f.name, StartedAt: slot, FinishedAt: slot}
}

func TestRouterPicksByTarget(t *testing.T) {
	r := NewRouter(fixedExecutor{"http"}, fixedExecutor{"exec"})
	ctx := context.Background()
	cases := []struct {
		name   string
		a      Attempt
		state  pb.RunState
		detail string
	}{
		{"http", Attempt{HTTP: &pb.HttpTarget{}}, pb.RunState_RUN_STATE_SUCCEEDED, "http"},
		{"exec", Attempt{Exec: &pb.ExecTarget{}}, pb.RunState_RUN_STATE_SUCCEEDED, "exec"},
		{"none", Attempt{}, pb.RunState_RUN_STATE_FAILED, "no target"},
		{"both", Attempt{HTTP: &pb.HttpTarget{}, Exec: &pb.ExecTarget{}}, pb.RunState_RUN_STATE_FAILED, "both http and exec target set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantState(t, r.Execute(ctx, c.a), c.state, c.detail)
		})
	}
	wantState(t, NewRouter(nil, nil).Execute(ctx, Attempt{Exec: &pb.ExecTarget{}}), pb.RunState_RUN_STATE_FAILED, "no exec executor")
}
