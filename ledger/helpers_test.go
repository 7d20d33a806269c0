package ledger_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

var slot = time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)

// attempt is attempt n of the nightly-billing run of slot, carrying token.
func attempt(token uint64, n uint32) fence.Run {
	return runOf("nightly-billing", slot, token, n)
}

func runOf(job string, at time.Time, token uint64, n uint32) fence.Run {
	return fence.Run{
		Token: token, Job: job, RunID: job + "-" + at.Format("150405"), Attempt: n,
		ScheduledAt: at, IdempotencyKey: job + "/" + fence.FormatScheduledAt(at),
	}
}

type service struct {
	path   string
	ledger *ledger.Ledger
	server *ledger.Server
	out    *lockedBuffer
}

func open(t *testing.T, path string, scope ledger.Scope) *service {
	t.Helper()
	l, err := ledger.Open(path, scope, fence.WithOpenTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	out := &lockedBuffer{}
	return &service{path: path, ledger: l, server: ledger.NewServer(l, out), out: out}
}

func newService(t *testing.T) *service {
	return open(t, filepath.Join(t.TempDir(), "ledger.db"), ledger.ScopeJob)
}

// deliver posts run to /run as raftcron would and returns the status and JSON reply.
func (s *service) deliver(t *testing.T, run fence.Run) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/run", strings.NewReader(`{"mode":"full"}`))
	run.SetHeader(req.Header)
	return s.do(t, req)
}

func (s *service) do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.server.ServeHTTP(rec, req)
	var reply map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
		t.Fatalf("%s %s: reply %q is not a JSON object: %v", req.Method, req.URL, rec.Body, err)
	}
	return rec.Code, reply
}

func (s *service) get(t *testing.T, target string, into any) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.server.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s = %d %s", target, rec.Code, rec.Body)
	}
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatalf("GET %s: %v in %s", target, err, rec.Body)
		}
	}
	return rec.Body.String()
}

func (s *service) entries(t *testing.T) []ledger.Entry {
	t.Helper()
	list, err := s.ledger.Entries("", 0)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	return list
}

// lockedBuffer is an io.Writer that concurrent handlers may share.
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
