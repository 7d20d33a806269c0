package fence

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// httpTarget is a fenced test server whose handler counts its calls and answers with
// the status in the X-Test-Status request header (200 by default).
type httpTarget struct {
	srv   *httptest.Server
	fence *Fence
	calls atomic.Int32
	last  atomic.Pointer[Run]
}

func newHTTPTarget(t *testing.T, opts ...Option) *httpTarget {
	t.Helper()
	ht := &httpTarget{fence: NewFence(NewMemoryGuard(), NewMemoryDedupe(100))}
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ht.calls.Add(1)
		if run, ok := RunFromContext(r.Context()); ok {
			ht.last.Store(&run)
		}
		if s := r.Header.Get("X-Test-Status"); s == "500" {
			http.Error(w, "downstream failed", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "applied")
	})
	ht.srv = httptest.NewServer(Middleware(ht.fence, opts...)(handler))
	t.Cleanup(ht.srv.Close)
	return ht
}

type reply struct {
	status int
	body   map[string]any
	raw    string
}

func (ht *httpTarget) post(t *testing.T, h http.Header) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ht.srv.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := ht.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, raw: string(raw)}
	if resp.Header.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("reply is not JSON: %q", raw)
		}
	}
	return r
}

func headerFor(token uint64, key string) http.Header {
	h := http.Header{}
	runWith(token, key).SetHeader(h)
	return h
}

func TestMiddlewareRefusesBadHeaders(t *testing.T) {
	ht := newHTTPTarget(t)
	cases := map[string]struct {
		edit func(http.Header)
		want string
	}{
		"missing token": {func(h http.Header) { h.Del(HeaderFencingToken) }, "X-Raftcron-Fencing-Token: missing"},
		"garbled token": {func(h http.Header) { h.Set(HeaderFencingToken, "4x2") }, "X-Raftcron-Fencing-Token: not an unsigned integer"},
		"zero token":    {func(h http.Header) { h.Set(HeaderFencingToken, "0") }, "X-Raftcron-Fencing-Token: token 0 is never issued"},
		"missing key":   {func(h http.Header) { h.Del(HeaderIdempotencyKey) }, "Idempotency-Key: missing"},
		"no headers":    {func(h http.Header) { clear(h) }, "X-Raftcron-Fencing-Token: missing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := headerFor(5, "k-"+name)
			c.edit(h)
			r := ht.post(t, h)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d (%s), want 400", r.status, r.raw)
			}
			if msg, _ := r.body["error"].(string); !strings.HasPrefix(msg, c.want) {
				t.Fatalf("error = %q, want it to start with %q", msg, c.want)
			}
		})
	}
	if n := ht.calls.Load(); n != 0 {
		t.Fatalf("handler called %d times for bad requests", n)
	}
	if h, _ := ht.fence.Guard.Highest(context.Background(), "nightly-billing"); h != 0 {
		t.Fatalf("a bad request admitted a token: Highest = %d", h)
	}
}

func TestMiddlewareRefusesStaleToken(t *testing.T) {
	ht := newHTTPTarget(t)
	if r := ht.post(t, headerFor(42, "k42")); r.status != http.StatusOK || r.raw != "applied" {
		t.Fatalf("token 42: %d %q", r.status, r.raw)
	}
	r := ht.post(t, headerFor(41, "k41"))
	if r.status != http.StatusConflict {
		t.Fatalf("token 41 after 42: status %d (%s), want 409", r.status, r.raw)
	}
	want := map[string]any{"error": "stale fencing token", "token": 41.0, "highest": 42.0, "scope": "nightly-billing"}
	for k, v := range want {
		if r.body[k] != v {
			t.Fatalf("409 body %s = %v, want %v (body %s)", k, r.body[k], v, r.raw)
		}
	}
	if n := ht.calls.Load(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
}

func TestMiddlewareAcknowledgesDuplicate(t *testing.T) {
	ht := newHTTPTarget(t)
	for i, token := range []uint64{42, 42, 43} {
		r := ht.post(t, headerFor(token, "nightly-billing/2026-11-22T01:02:03Z"))
		if r.status != http.StatusOK {
			t.Fatalf("delivery %d: status %d (%s)", i, r.status, r.raw)
		}
		if i > 0 && r.body["status"] != "duplicate" {
			t.Fatalf("delivery %d: body %s, want {\"status\":\"duplicate\"}", i, r.raw)
		}
	}
	if n := ht.calls.Load(); n != 1 {
		t.Fatalf("handler called %d times for one run delivered three times", n)
	}
	if got := ht.last.Load(); got == nil || got.Token != 42 || got.Job != "nightly-billing" {
		t.Fatalf("handler saw run %+v, want token 42 in its context", got)
	}
}

// TestMiddlewarePausedLeader replays the paused-leader case: the new leader's attempt 42
// of a run is applied, then the old leader's attempt 41 of the same run arrives.
func TestMiddlewarePausedLeader(t *testing.T) {
	ht := newHTTPTarget(t)
	const key = "nightly-billing/2026-11-22T01:02:03Z"
	if r := ht.post(t, headerFor(42, key)); r.status != http.StatusOK || r.raw != "applied" {
		t.Fatalf("token 42: %d %q", r.status, r.raw)
	}
	r := ht.post(t, headerFor(41, key))
	if r.status != http.StatusConflict || r.body["token"] != 41.0 || r.body["highest"] != 42.0 {
		t.Fatalf("old leader's token 41: %d %s, want 409 naming 41 and 42", r.status, r.raw)
	}
	if n := ht.calls.Load(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
}

func TestMiddlewareDoesNotRecordFailedHandler(t *testing.T) {
	ht := newHTTPTarget(t)
	h := headerFor(42, "k")
	h.Set("X-Test-Status", "500")
	if r := ht.post(t, h); r.status != http.StatusInternalServerError {
		t.Fatalf("status = %d, want the handler's 500", r.status)
	}
	if seen, _ := ht.fence.Dedupe.Seen(context.Background(), "k"); seen {
		t.Fatal("the key of a failed request was recorded")
	}
	if r := ht.post(t, headerFor(42, "k")); r.status != http.StatusOK || r.raw != "applied" {
		t.Fatalf("retry: %d %q, want the handler to run again", r.status, r.raw)
	}
	if n := ht.calls.Load(); n != 2 {
		t.Fatalf("handler called %d times, want 2", n)
	}
}

func TestMiddlewareWithScope(t *testing.T) {
	ht := newHTTPTarget(t, WithScope(func(Run) string { return "billing-db" }))
	if r := ht.post(t, headerFor(42, "k1")); r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	if h, _ := ht.fence.Guard.Highest(context.Background(), "billing-db"); h != 42 {
		t.Fatalf("Highest(billing-db) = %d, want 42", h)
	}
	r := ht.post(t, headerFor(41, "k2"))
	if r.status != http.StatusConflict || r.body["scope"] != "billing-db" {
		t.Fatalf("stale under a custom scope: %d %s", r.status, r.raw)
	}
}

type brokenGuard struct{}

func (brokenGuard) Admit(context.Context, string, uint64) error {
	return errors.New("disk on fire")
}
func (brokenGuard) Highest(context.Context, string) (uint64, error) { return 0, nil }

func TestMiddlewareReportsStoreFailure(t *testing.T) {
	ht := newHTTPTarget(t)
	ht.fence.Guard = brokenGuard{}
	r := ht.post(t, headerFor(42, "k"))
	if r.status != http.StatusInternalServerError || !strings.Contains(r.body["error"].(string), "disk on fire") {
		t.Fatalf("store failure: %d %s, want 500 naming the cause", r.status, r.raw)
	}
	if n := ht.calls.Load(); n != 0 {
		t.Fatalf("handler called %d times although the token could not be checked", n)
	}
}

func TestStatusWriterSeesImplicitAndExplicitStatus(t *testing.T) {
	for _, c := range []struct {
		name  string
		serve func(w http.ResponseWriter)
		want  int
	}{
		{"nothing written", func(http.ResponseWriter) {}, 200},
		{"body only", func(w http.ResponseWriter) { io.WriteString(w, "x") }, 200},
		{"created", func(w http.ResponseWriter) { w.WriteHeader(201) }, 201},
		{"early hints then 503", func(w http.ResponseWriter) { w.WriteHeader(103); w.WriteHeader(503) }, 503},
		{"flush", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, 200},
	} {
		rec := httptest.NewRecorder()
		sw := &statusWriter{ResponseWriter: rec}
		c.serve(sw)
		if sw.code() != c.want {
			t.Fatalf("%s: status %d, want %d", c.name, sw.code(), c.want)
		}
	}
}
