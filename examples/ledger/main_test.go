package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/ledger"
)

func TestRunRefusesBadCommandLines(t *testing.T) {
	data := filepath.Join(t.TempDir(), "ledger.db")
	cases := map[string][]string{
		"no --data":     {"--addr", "127.0.0.1:0"},
		"unknown scope": {"--data", data, "--scope", "team"},
		"unknown flag":  {"--data", data, "--port", "9000"},
		"extra arg":     {"--data", data, "serve"},
	}
	for name, args := range cases {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("%s: run = %v, want a usage error", name, err)
		}
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused command line created the data file (stat: %v)", err)
	}
}

func TestRunRefusesCorruptDataFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(data, []byte("this is not a bbolt file"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--data", data}, io.Discard, io.Discard)
	if !errors.Is(err, fence.ErrCorrupt) || !strings.Contains(err.Error(), data) {
		t.Fatalf("run on a corrupt file = %v, want fence.ErrCorrupt naming the file", err)
	}
}

func TestRunServesUntilCancelledThenReleasesTheFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "ledger.db")
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--data", data}, out, io.Discard) }()

	listening := regexp.MustCompile(`listening on (http://\S+)`)
	var url string
	testutil.WaitFor(t, 10*time.Second, "the listening line", func() bool {
		m := listening.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	req, err := http.NewRequest(http.MethodPost, url+"/run", nil)
	if err != nil {
		t.Fatal(err)
	}
	fence.Run{Token: 3, Job: "demo", RunID: "demo-1", IdempotencyKey: "demo/2026-11-22T02:00:00Z",
		ScheduledAt: time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC), Attempt: 1}.SetHeader(req.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /run = %d, want 200", resp.StatusCode)
	}
	if !strings.Contains(out.String(), " demo 2026-11-22T02:00:00Z token=3 attempt=1 applied") {
		t.Fatalf("stdout lacks the decision line:\n%s", out)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context was cancelled")
	}
	l, err := ledger.Open(data, ledger.ScopeJob, fence.WithOpenTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("reopen after shutdown: %v", err)
	}
	defer l.Close()
	if got, err := l.Entries("", 0); err != nil || len(got) != 1 {
		t.Fatalf("entries after shutdown = %v, %v; want the one applied", got, err)
	}
}

// lockedBuffer is an io.Writer that the server and the test may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
