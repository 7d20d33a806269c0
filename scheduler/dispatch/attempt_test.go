package dispatch

import (
	"context"
	"strings"
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

func TestLimitJobDeadlineWinsTie(t *testing.T) {
	parent := context.Background()
	ctx, cancel := withLimit(parent, time.Millisecond, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	state, detail, ok := interrupted(parent, ctx)
	if !ok || state != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED || detail != "deadline 1ms exceeded" {
		t.Fatalf("got %v %v %q", ok, state, detail)
	}
}

func TestLimitShorterTargetTimeoutFails(t *testing.T) {
	parent := context.Background()
	ctx, cancel := withLimit(parent, time.Hour, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	state, detail, ok := interrupted(parent, ctx)
	if !ok || state != pb.RunState_RUN_STATE_FAILED || detail != "timeout after 1ms" {
		t.Fatalf("got %v %v %q", ok, state, detail)
	}
}

func TestOneLineDetail(t *testing.T) {
	got := oneLine("line one\nline\ttwo \xff")
	if got != "line one line two \uFFFD" {
		t.Fatalf("oneLine = %q", got)
	}
	long := oneLine(strings.Repeat("é", 1000))
	if len(long) > maxDetail || !strings.HasSuffix(long, "...") || !strings.HasPrefix(long, "é") {
		t.Fatalf("long detail not bounded: %d bytes", len(long))
	}
	if strings.ContainsRune(long, '\uFFFD') {
		t.Fatalf("truncation split a rune: %q", long[len(long)-10:])
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
