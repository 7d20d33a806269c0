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
