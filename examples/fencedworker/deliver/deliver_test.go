package deliver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftcron/raftcron/examples/fencedworker/deliver"
	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
	"github.com/raftcron/raftcron/worker"
)

// The deliveries raftcron makes when a worker is lost or paused: the first
// attempt, its re-dispatch under a larger token by another worker, and
// the first attempt again, late. The run is applied once, and the late
// attempt is refused as stale.
func TestExactlyOnceAcrossRedispatchAndLateAttempt(t *testing.T) {
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.ScopeJob)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	srv := httptest.NewServer(ledger.NewServer(l, nil))
	t.Cleanup(srv.Close)
	h := deliver.Handler(srv.Client(), srv.URL+"/run")
	ctx := context.Background()

	slot := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	first := worker.Run{Job: "payroll", RunID: "payroll-7", ScheduledAt: slot, Attempt: 1, Token: 7,
		IdempotencyKey: "payroll/2026-11-22T01:02:03Z", Payload: `{"account":"alice","cents":100}`, Worker: "w1"}
	redispatch := first
	redispatch.Attempt, redispatch.Token, redispatch.Worker = 2, 9, "w2"

	if err := h(ctx, first); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	if err := h(ctx, redispatch); err != nil {
		t.Fatalf("re-dispatch of an applied run: %v, want it acknowledged", err)
	}
	if err := h(ctx, first); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("late first attempt: %v, want refused as stale (the worker records it fenced)", err)
	}
	entries, err := l.Entries("payroll", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Token != 7 {
		b, _ := json.Marshal(entries)
		t.Fatalf("ledger %s, want the run applied once, by its first attempt", b)
	}
}

func TestDownstreamFailureFailsTheAttempt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "disk full", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	err := deliver.Handler(srv.Client(), srv.URL)(context.Background(), worker.Run{Job: "payroll", RunID: "payroll-1",
		Token: 1, Attempt: 1, IdempotencyKey: "payroll/2026-11-22T01:02:03Z", ScheduledAt: time.Unix(1_795_000_000, 0)})
	if err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("err = %v, want a plain failure (retried by the job's policy)", err)
	}
}
