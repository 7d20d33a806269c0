package dispatch

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

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

// A run that is no slot of its own is named by its id, for every attempt
// of it; a slot's runs (scheduled, catch-up) keep the slot's key.
func TestIdempotencyKeyByRunKind(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	for kind, want := range map[pb.FireKind]string{
		pb.FireKind_FIRE_KIND_UNSPECIFIED: "billing/2026-11-22T01:02:03Z",
		pb.FireKind_FIRE_KIND_SCHEDULED:   "billing/2026-11-22T01:02:03Z",
		pb.FireKind_FIRE_KIND_CATCHUP:     "billing/2026-11-22T01:02:03Z",
		pb.FireKind_FIRE_KIND_MANUAL:      "billing/manual/billing-7",
	} {
		for n := uint32(1); n <= 2; n++ {
			a := Attempt{Job: "billing", RunID: "billing-7", Token: uint64(6 + n), Number: n, ScheduledAt: at, Kind: kind}
			if got := a.IdempotencyKey(); got != want {
				t.Errorf("%s attempt %d: key %q, want %q", kind, n, got, want)
			}
		}
	}
}

// The rule is written for the run kinds to come: backfill fires a past slot
// again and keeps its key, a chained run is named by its id.
func TestRunKeyWordOfKindsToCome(t *testing.T) {
	if word, ok := runKeyWord("FIRE_KIND_BACKFILL"); ok {
		t.Errorf("backfill gets the run key word %q, want the slot's key", word)
	}
	if word, ok := runKeyWord("FIRE_KIND_CHAINED"); !ok || word != "chained" {
		t.Errorf("chained: %q, %v; want the run key word chained", word, ok)
	}
	// A kind added to the proto fails here until its rule is decided. A
	// check-in run is never dispatched, and one off the schedule has no
	// slot: its run names it.
	for _, name := range pb.FireKind_name {
		_, byRun := runKeyWord(name)
		if want := name == "FIRE_KIND_MANUAL" || name == "FIRE_KIND_CHAINED" || name == "FIRE_KIND_CHECKIN"; byRun != want {
			t.Errorf("%s named by its run: %v, want %v", name, byRun, want)
		}
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

// A target without a timeout of its own is still bounded: a webhook by
// 30 s, a command or a worker target by its job's deadline, or by an hour
// without one.
func TestTargetsWithoutTimeoutGetDefaults(t *testing.T) {
	for _, tc := range []struct {
		name              string
		a                 Attempt
		deadline, timeout time.Duration
	}{
		{"webhook", Attempt{HTTP: &pb.HttpTarget{}}, 0, 30 * time.Second},
		{"webhook with a deadline", Attempt{HTTP: &pb.HttpTarget{}, Deadline: time.Minute}, time.Minute, 30 * time.Second},
		{"webhook with its timeout", Attempt{HTTP: &pb.HttpTarget{Timeout: durationpb.New(5 * time.Minute)}}, 0, 5 * time.Minute},
		{"command", Attempt{Exec: &pb.ExecTarget{}}, 0, time.Hour},
		{"command with a deadline", Attempt{Exec: &pb.ExecTarget{}, Deadline: 3 * time.Hour}, 3 * time.Hour, 0},
		{"command with its timeout", Attempt{Exec: &pb.ExecTarget{Timeout: durationpb.New(2 * time.Hour)}}, 0, 2 * time.Hour},
		{"worker", Attempt{Worker: &pb.WorkerTarget{}}, 0, time.Hour},
		{"worker with a deadline", Attempt{Worker: &pb.WorkerTarget{}, Deadline: 3 * time.Hour}, 3 * time.Hour, 0},
		{"worker with its timeout", Attempt{Worker: &pb.WorkerTarget{Timeout: durationpb.New(time.Minute)}}, 0, time.Minute},
	} {
		if d, to := tc.a.Limits(); d != tc.deadline || to != tc.timeout {
			t.Errorf("%s: deadline %v timeout %v, want %v and %v", tc.name, d, to, tc.deadline, tc.timeout)
		}
	}
}
