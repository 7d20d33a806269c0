package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
)

var sinkSlot = time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)

func deliver(t *testing.T, s *Sink, token uint64, number uint32, slot time.Time) int {
	t.Helper()
	run := fence.Run{Token: token, Job: "a", RunID: "a-" + strconv.FormatUint(token, 10), Attempt: number,
		ScheduledAt: slot, IdempotencyKey: "a/" + slot.Format(time.RFC3339)}
	req := httptest.NewRequest(http.MethodPost, "/run", nil)
	req.RemoteAddr = "10.0.0.11:40000"
	run.SetHeader(req.Header)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Code
}

func newTestSink(t *testing.T, mode SinkMode) *Sink {
	t.Helper()
	s, err := NewSink(filepath.Join(t.TempDir(), "sink.db"), mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.SetSender("10.0.0.11", "n1")
	return s
}

func TestSinkFencesPerJobAndAppliesEachRunOnce(t *testing.T) {
	s := newTestSink(t, SinkFenced)
	next := sinkSlot.Add(time.Second)
	steps := []struct {
		token   uint64
		slot    time.Time
		code    int
		outcome Outcome
	}{
		{5, sinkSlot, 200, Applied},
		{6, sinkSlot, 200, Duplicate}, // a re-dispatch of the same run
		{7, next, 200, Applied},
		{5, sinkSlot, 409, Stale}, // the first attempt again, after a newer one
	}
	for i, st := range steps {
		if code := deliver(t, s, st.token, 1, st.slot); code != st.code {
			t.Fatalf("step %d: HTTP %d, want %d", i, code, st.code)
		}
	}
	got := s.Attempts()
	if len(got) != len(steps) {
		t.Fatalf("%d attempts recorded, want %d", len(got), len(steps))
	}
	for i, a := range got {
		if a.Outcome != steps[i].outcome || a.Seq != i+1 || a.Sender != "n1" || a.Slot != steps[i].slot.Unix() {
			t.Fatalf("attempt %d = %+v, want outcome %s, seq %d, sender n1", i, a, steps[i].outcome, i+1)
		}
	}
}

func TestSinkOpenAppliesEverything(t *testing.T) {
	s := newTestSink(t, SinkOpen)
	deliver(t, s, 7, 1, sinkSlot)
	if code := deliver(t, s, 5, 1, sinkSlot); code != 200 {
		t.Fatalf("HTTP %d, want 200", code)
	}
	for _, a := range s.Attempts() {
		if a.Outcome != Applied {
			t.Fatalf("open sink decided %s", a.Outcome)
		}
	}
}

func TestSinkRefusesMalformedRequests(t *testing.T) {
	s := newTestSink(t, SinkFenced)
	req := httptest.NewRequest(http.MethodPost, "/run", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Fatalf("no headers: HTTP %d, want 400", rec.Code)
	}
	// A key that does not name the run's slot breaks the contract.
	run := fence.Run{Token: 3, Job: "a", RunID: "a-3", Attempt: 1, ScheduledAt: sinkSlot, IdempotencyKey: "a/other"}
	req = httptest.NewRequest(http.MethodPost, "/run", nil)
	run.SetHeader(req.Header)
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Fatalf("wrong key: HTTP %d, want 400", rec.Code)
	}
	for _, a := range s.Attempts() {
		if a.Outcome != Bad || a.Detail == "" {
			t.Fatalf("malformed request recorded as %+v", a)
		}
	}
}

func TestSinkWaitWakesOnNewAttempts(t *testing.T) {
	s := newTestSink(t, SinkFenced)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- s.Wait(ctx, func(a []Attempt) bool { return len(a) >= 2 }) }()
	deliver(t, s, 1, 1, sinkSlot)
	deliver(t, s, 2, 1, sinkSlot.Add(time.Second))
	if !<-done {
		t.Fatal("Wait gave up although two attempts arrived")
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if s.Wait(short, func(a []Attempt) bool { return len(a) > 2 }) {
		t.Fatal("Wait reported a condition that never held")
	}
}

func TestSinkDelaysRepliesOfSlowJobsAfterDeciding(t *testing.T) {
	s := newTestSink(t, SinkFenced)
	s.SetDelay("a", 200*time.Millisecond)
	start := time.Now()
	done := make(chan int, 1)
	go func() { done <- deliver(t, s, 1, 1, sinkSlot) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !s.Wait(ctx, func(a []Attempt) bool { return len(a) == 1 }) {
		t.Fatal("the request was not recorded")
	}
	if code := <-done; code != 200 || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("HTTP %d after %s, want 200 after at least 200ms", code, time.Since(start))
	}
}
