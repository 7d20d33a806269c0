//go:build failpoints

package failpoint

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestParseReadsNamesAndValues(t *testing.T) {
	got := parse(" dispatch-before-commit, clock-offset=-30s,,pause-after-commit=/x/y ")
	want := map[string]string{
		DispatchBeforeCommit: "",
		ClockOffset:          "-30s",
		PauseAfterCommit:     "/x/y",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parse = %v, want %v", got, want)
	}
}

func TestPauseAfterCommitHoldsOneArmedAttemptUntilReleased(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvVar, PauseAfterCommit+"="+dir)
	enabled = func() map[string]string { return parse(os.Getenv(EnvVar)) }

	// Not armed: passes through at once with the same context.
	ctx, cancel := context.WithCancel(context.Background())
	if got := HoldAfterCommit(ctx, 1); got != ctx {
		t.Fatal("an unarmed pause changed the context")
	}

	if err := os.WriteFile(filepath.Join(dir, "arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan context.Context, 1)
	go func() { done <- HoldAfterCommit(ctx, 42) }()
	held := filepath.Join(dir, "held")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(held); err == nil && string(b) == "42" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("held file with token 42 never appeared")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("returned while still held")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := os.Remove(held); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got.Err() != nil {
			t.Fatal("a released attempt's context is cancelled: it would never be sent")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not released after held was removed")
	}
	// The arm was consumed: the next attempt passes.
	if got := HoldAfterCommit(ctx, 43); got != ctx {
		t.Fatal("a second attempt was held by one arm")
	}
}

func TestOffsetAndRewind(t *testing.T) {
	enabled = func() map[string]string { return parse(ClockOffset + "=-30s," + SkipSlotDedupe) }
	if got := Offset(); got != -30*time.Second {
		t.Fatalf("Offset = %v, want -30s", got)
	}
	if got := RewindCursor("a", 100); got != 100-rewindSlots {
		t.Fatalf("first RewindCursor(a, 100) = %d", got)
	}
	if got := RewindCursor("a", 101); got != 101 {
		t.Fatalf("second RewindCursor(a, 101) = %d, want 101: once per job", got)
	}
	if got := RewindCursor("b", 0); got != 0 {
		t.Fatalf("RewindCursor(b, 0) = %d, want 0 (no cursor stays no cursor)", got)
	}
	enabled = func() map[string]string { return parse("") }
	if Offset() != 0 || RewindCursor("c", 100) != 100 || On(StaleReads) {
		t.Fatal("hooks act while none is enabled")
	}
}
