package proc

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestLimitJobDeadlineWinsTie(t *testing.T) {
	parent := context.Background()
	ctx, cancel := WithLimit(parent, time.Millisecond, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	state, detail, ok := Interrupted(parent, ctx)
	if !ok || state != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED || detail != "deadline 1ms exceeded" {
		t.Fatalf("got %v %v %q", ok, state, detail)
	}
}

func TestLimitShorterTargetTimeoutFails(t *testing.T) {
	parent := context.Background()
	ctx, cancel := WithLimit(parent, time.Hour, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	state, detail, ok := Interrupted(parent, ctx)
	if !ok || state != pb.RunState_RUN_STATE_FAILED || detail != "timeout after 1ms" {
		t.Fatalf("got %v %v %q", ok, state, detail)
	}
}

func TestOneLineDetail(t *testing.T) {
	got := OneLine("line one\nline\ttwo \xff")
	if got != "line one line two \uFFFD" {
		t.Fatalf("OneLine = %q", got)
	}
	long := OneLine(strings.Repeat("é", 1000))
	if len(long) > MaxDetail || !strings.HasSuffix(long, "...") || !strings.HasPrefix(long, "é") {
		t.Fatalf("long detail not bounded: %d bytes", len(long))
	}
	if strings.ContainsRune(long, '\uFFFD') {
		t.Fatalf("truncation split a rune: %q", long[len(long)-10:])
	}
}

// Details that are one line already, as most are ("http 200 OK"), come back
// as they are, at no cost; anything else is still cleaned.
func TestOneLineKeepsCleanDetailWithoutAllocating(t *testing.T) {
	for _, s := range []string{"http 200 OK", "exit status 1", "a", ""} {
		if got := OneLine(s); got != s {
			t.Fatalf("OneLine(%q) = %q", s, got)
		}
		if n := testing.AllocsPerRun(100, func() { _ = OneLine(s) }); n != 0 {
			t.Fatalf("OneLine(%q) allocated %v times", s, n)
		}
	}
	for in, want := range map[string]string{
		" lead": "lead", "trail ": "trail", "two  spaces": "two spaces", "tab\there": "tab here",
		"nul\x00kept": "nul\x00kept", "é ok": "é ok", "bad \xff": "bad \uFFFD",
	} {
		if got := OneLine(in); got != want {
			t.Fatalf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
