package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/syncbuf"
	"github.com/raftcron/raftcron/internal/testutil"
)

// An info line waits in the buffer and is written out within the flush
// delay without anything else being logged.
func TestLogBufferFlushesInfoLater(t *testing.T) {
	var out syncbuf.Buffer
	buf := newLogBuffer(&out)
	defer buf.Close()
	log := slog.New(flushingHandler{slog.NewTextHandler(buf, nil), buf})
	log.Info("run attempt finished", "job", "a")
	testutil.WaitFor(t, 10*time.Second, "the info line flushed", func() bool { return strings.Contains(out.String(), "job=a") })
}

// A warning is written out before Warn returns, with the lines before it.
func TestLogBufferWritesWarningsAtOnce(t *testing.T) {
	t.Parallel()
	var out syncbuf.Buffer
	buf := newLogBuffer(&out)
	defer buf.Close()
	log := slog.New(flushingHandler{slog.NewTextHandler(buf, nil), buf}).With("node", "n1")
	log.Info("first")
	log.Warn("second")
	got := out.String()
	if !strings.Contains(got, "msg=first") || !strings.Contains(got, "msg=second node=n1") {
		t.Fatalf("after Warn the output is %q, want both lines", got)
	}
}

// Close writes out what is still buffered.
func TestLogBufferCloseFlushes(t *testing.T) {
	t.Parallel()
	var out syncbuf.Buffer
	buf := newLogBuffer(&out)
	slog.New(slog.NewTextHandler(buf, nil)).Info("last words")
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "last words") {
		t.Fatalf("after Close the output is %q", out.String())
	}
}
