package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushDelay is how long a log line may wait in the buffer. Under load
// a leader logs one line per finished attempt, thousands per second; one
// write per line was several percent of its CPU.
const logFlushDelay = 100 * time.Millisecond

// logBuffer batches log lines into few writes: the first line written into
// an empty buffer arms a timer that flushes after logFlushDelay, and a full
// buffer is written at once. Close flushes what is left.
type logBuffer struct {
	// mu guards buf and armed; the timer's flush takes it too.
	mu    sync.Mutex
	buf   *bufio.Writer
	armed bool
	timer *time.Timer
}

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{buf: bufio.NewWriterSize(w, 64<<10)}
	b.timer = time.AfterFunc(time.Hour, func() { _ = b.Flush() })
	b.timer.Stop()
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.armed {
		b.armed = true
		b.timer.Reset(logFlushDelay)
	}
	return b.buf.Write(p)
}

// Flush writes out every buffered line.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	return b.buf.Flush()
}

// Close stops the timer and flushes; lines written later are still
// buffered until the next Flush.
func (b *logBuffer) Close() error {
	b.timer.Stop()
	return b.Flush()
}

// flushingHandler writes warnings and errors out at once, so that the line
// explaining a failure is on disk even if the process dies right after.
type flushingHandler struct {
	slog.Handler
	buf *logBuffer
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		_ = h.buf.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.buf}
}
