package proc

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestLimitJobDeadlineWinsTie(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// A detail that is one line already comes back as it is; any other takes
// the long way, with the same result as ever.
func TestOneLineKeepsWhatIsOneLine(t *testing.T) {
	slow := func(s string) string {
		s = strings.ToValidUTF8(s, "\uFFFD")
		s = strings.Join(strings.Fields(s), " ")
		if len(s) > MaxDetail {
			s = strings.ToValidUTF8(s[:MaxDetail-len("...")], "") + "..."
		}
		return s
	}
	for _, s := range []string{"", "handler charge succeeded", "a", " a", "a ", "a  b", "a\tb", "a\nb",
		"caf\u00e9", "a\u00a0b", "a\u2003b", "\xff", "x\x7fy", strings.Repeat("a", MaxDetail),
		strings.Repeat("a", MaxDetail+1), strings.Repeat("ab ", 200)} {
		if got, want := OneLine(s), slow(s); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", s, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { OneLine("worker w1: handler charge succeeded") }); n != 0 {
		t.Errorf("OneLine of a line allocates %v times, want 0", n)
	}
}
