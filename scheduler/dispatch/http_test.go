package dispatch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// newServer starts an httptest server on 127.0.0.1 (httptest's default).
func newServer(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// blockUntilGone holds the request until the client goes away.
func blockUntilGone(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

type seenRequest struct {
	method string
	header http.Header
	host   string
	body   string
}

func TestHTTPSendsEveryHeaderBodyAndMethod(t *testing.T) {
	seen := make(chan seenRequest, 1)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- seenRequest{r.Method, r.Header.Clone(), r.Host, string(b)}
	})
	a := httpAttempt(s.URL + "/hook")
	a.HTTP.Method = "PUT"
	a.HTTP.Body = `{"x":1}`
	a.HTTP.Headers = map[string]string{
		"Content-Type":           "application/json",
		"X-Custom":               "yes",
		"Host":                   "billing.internal",
		fence.HeaderFencingToken: "999999", // must not override the real token
	}
	out := NewHTTPExecutor(nil).Execute(context.Background(), a)
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")

	r := receive(t, seen, time.Second, "request")
	want := map[string]string{
		fence.HeaderFencingToken:   "42",
		fence.HeaderJob:            "billing",
		fence.HeaderRunID:          "run-7",
		fence.HeaderScheduledAt:    "2026-11-22T01:02:03Z",
		fence.HeaderAttempt:        "2",
		fence.HeaderIdempotencyKey: "billing/2026-11-22T01:02:03Z",
		"Content-Type":             "application/json",
		"X-Custom":                 "yes",
		"User-Agent":               "raftcron",
	}
	for k, v := range want {
		if got := r.header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %q, want [%q]", k, got, v)
		}
	}
	if r.method != "PUT" || r.body != `{"x":1}` || r.host != "billing.internal" {
		t.Errorf("method %q body %q host %q", r.method, r.body, r.host)
	}
}

// A chained run's request names its parent runs; no other request does.
func TestHTTPSendsParentRunsOfAChainedRun(t *testing.T) {
	seen := make(chan seenRequest, 2)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- seenRequest{header: r.Header.Clone()}
	})
	a := httpAttempt(s.URL + "/hook")
	NewHTTPExecutor(nil).Execute(context.Background(), a)
	if got := receive(t, seen, time.Second, "request").header.Values(fence.HeaderParentRuns); len(got) != 0 {
		t.Fatalf("a run without parents sent %s %q", fence.HeaderParentRuns, got)
	}
	a.ParentRuns = "export-41@41,export-43@43"
	NewHTTPExecutor(nil).Execute(context.Background(), a)
	if got := receive(t, seen, time.Second, "request").header.Values(fence.HeaderParentRuns); len(got) != 1 || got[0] != a.ParentRuns {
		t.Fatalf("%s = %q, want [%q]", fence.HeaderParentRuns, got, a.ParentRuns)
	}
}

func TestHTTPStatusDecidesState(t *testing.T) {
	redirectTargetHits := atomic.Int32{}
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			redirectTargetHits.Add(1)
		case "/redirect":
			http.Redirect(w, r, "/moved", http.StatusFound)
		default:
			code := map[string]int{"/200": 200, "/204": 204, "/202": 202, "/500": 500, "/409": 409, "/599": 599}[r.URL.Path]
			w.WriteHeader(code)
			_, _ = io.WriteString(w, "body of "+r.URL.Path)
		}
	})
	cases := []struct {
		path    string
		success []uint32
		state   pb.RunState
		detail  string
	}{
		{"/200", nil, pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK"},
		{"/204", nil, pb.RunState_RUN_STATE_SUCCEEDED, "http 204 No Content"},
		{"/500", nil, pb.RunState_RUN_STATE_FAILED, "http 500 Internal Server Error"},
		{"/599", nil, pb.RunState_RUN_STATE_FAILED, "http 599"},
		{"/409", nil, pb.RunState_RUN_STATE_FENCED, "fenced by downstream: 409 Conflict"},
		{"/409", []uint32{409}, pb.RunState_RUN_STATE_FENCED, "fenced by downstream: 409 Conflict"},
		{"/200", []uint32{202}, pb.RunState_RUN_STATE_FAILED, "http 200 OK"},
		{"/202", []uint32{202}, pb.RunState_RUN_STATE_SUCCEEDED, "http 202 Accepted"},
		{"/500", []uint32{200, 500}, pb.RunState_RUN_STATE_SUCCEEDED, "http 500 Internal Server Error"},
		{"/redirect", nil, pb.RunState_RUN_STATE_FAILED, "http 302 Found"},
	}
	ex := NewHTTPExecutor(nil)
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			a := httpAttempt(s.URL + c.path)
			a.HTTP.SuccessCodes = c.success
			a.HTTP.KeepResponse = true
			out := ex.Execute(context.Background(), a)
			wantState(t, out, c.state, c.detail)
			if c.path == "/500" && string(out.Output) != "body of /500" {
				t.Fatalf("output = %q", out.Output)
			}
		})
	}
	if n := redirectTargetHits.Load(); n != 0 {
		t.Fatalf("redirect was followed %d times", n)
	}
}

func TestHTTPUnreachableTargetFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	start := time.Now()
	out := NewHTTPExecutor(nil).Execute(context.Background(), httpAttempt("http://"+addr+"/hook?secret=s3"))
	wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
	if !strings.Contains(out.Detail, "connection refused") {
		t.Fatalf("detail %q lacks the reason", out.Detail)
	}
	if strings.Contains(out.Detail, "s3") {
		t.Fatalf("detail leaks the URL: %q", out.Detail)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("unreachable target took %s", d)
	}
}

func TestHTTPTargetTimeoutFails(t *testing.T) {
	s := newServer(t, blockUntilGone)
	a := httpAttempt(s.URL)
	a.HTTP.Timeout = durationpb.New(200 * time.Millisecond)
	a.Deadline = time.Minute
	wantState(t, NewHTTPExecutor(nil).Execute(context.Background(), a),
		pb.RunState_RUN_STATE_FAILED, "timeout after 200ms")
}

func TestHTTPJobDeadlineExceeded(t *testing.T) {
	s := newServer(t, blockUntilGone)
	a := httpAttempt(s.URL)
	a.HTTP.Timeout = durationpb.New(time.Minute)
	a.Deadline = 200 * time.Millisecond
	wantState(t, NewHTTPExecutor(nil).Execute(context.Background(), a),
		pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, "deadline 200ms exceeded")
}

func TestHTTPCancelReportsCancelledWithCause(t *testing.T) {
	arrived := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-arrived
		cancel(errors.New("leadership lost"))
	}()
	wantState(t, NewHTTPExecutor(nil).Execute(ctx, httpAttempt(s.URL)),
		pb.RunState_RUN_STATE_CANCELLED, "cancelled: leadership lost")
}

func TestHTTPAlreadyCancelledSendsNothing(t *testing.T) {
	var hits atomic.Int32
	s := newServer(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantState(t, NewHTTPExecutor(nil).Execute(ctx, httpAttempt(s.URL)),
		pb.RunState_RUN_STATE_CANCELLED, "cancelled: context canceled")
	if hits.Load() != 0 {
		t.Fatal("a cancelled attempt reached the target")
	}
}

func TestHTTPOutputTruncatedTo4KiB(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("a", 100<<10))
	})
	out := NewHTTPExecutor(nil).Execute(context.Background(), keepResponse(httpAttempt(s.URL)))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
	if len(out.Output) != MaxOutput || strings.Trim(string(out.Output), "a") != "" {
		t.Fatalf("output %d bytes, want %d of the body", len(out.Output), MaxOutput)
	}
}

// keepResponse makes a keep the reply's body (http.keep_response).
func keepResponse(a Attempt) Attempt {
	a.HTTP.KeepResponse = true
	return a
}

// Output is the whole body when it fits, whether its length is announced
// or not, and nothing when the reply has no body.
func TestHTTPOutputOfShortBodies(t *testing.T) {
	exact := strings.Repeat("c", MaxOutput)
	for _, c := range []struct {
		name, body string
		chunked    bool
	}{
		{"empty", "", false},
		{"short", "ok", false},
		{"short chunked", "ok", true},
		{"exactly the cap", exact, false},
		{"exactly the cap chunked", exact, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if !c.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(c.body)))
				}
				_, _ = io.WriteString(w, c.body)
				if c.chunked {
					w.(http.Flusher).Flush()
				}
			})
			out := NewHTTPExecutor(nil).Execute(context.Background(), keepResponse(httpAttempt(s.URL)))
			wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
			if string(out.Output) != c.body || (c.body == "" && out.Output != nil) {
				t.Fatalf("output %d bytes, want the %d of the body", len(out.Output), len(c.body))
			}
		})
	}
}

func TestHTTPReusesConnections(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("b", MaxOutput+1000)) // more than is kept: drained
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	ex := NewHTTPExecutor(nil)
	for i := range 6 {
		a := httpAttempt(s.URL)
		a.HTTP.KeepResponse = i%2 == 0 // a body kept in part, or not at all, is drained
		wantState(t, ex.Execute(context.Background(), a), pb.RunState_RUN_STATE_SUCCEEDED, "")
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Fatalf("6 sequential attempts opened %d connections, want 1", conns)
	}
}

func TestHTTPBadRequestFailsCleanly(t *testing.T) {
	ex := NewHTTPExecutor(nil)
	for name, a := range map[string]Attempt{
		"url":    httpAttempt("http://[::1"),
		"method": func() Attempt { a := httpAttempt("http://127.0.0.1:1"); a.HTTP.Method = "BAD METHOD"; return a }(),
		"header": func() Attempt {
			a := httpAttempt("http://127.0.0.1:1")
			a.HTTP.Headers = map[string]string{"X": "a\nb"}
			return a
		}(),
		"none": {Job: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			out := ex.Execute(context.Background(), a)
			wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
			if out.Detail == "" || strings.ContainsAny(out.Detail, "\n") {
				t.Fatalf("detail %q", out.Detail)
			}
		})
	}
}

func BenchmarkHTTPDispatch(b *testing.B) {
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	ex := NewHTTPExecutor(nil)
	a := httpAttempt(s.URL)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out := ex.Execute(ctx, a); out.State != pb.RunState_RUN_STATE_SUCCEEDED {
			b.Fatalf("%v %s", out.State, out.Detail)
		}
	}
	b.ReportMetric(float64(conns.Load()), "conns")
}

// Over https the executor's transport offers h2 by ALPN, its own dialer and
// egress check notwithstanding, and speaks HTTP/2 to a receiver that takes
// it.
func TestHTTPSNegotiatesHTTP2(t *testing.T) {
	protos := make(chan string, 1)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { protos <- r.Proto }))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	tr := newTransport(egress(t, "169.254.0.0/16"), nil)
	tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	ex := &HTTPExecutor{rt: tr}
	wantState(t, ex.Execute(context.Background(), httpAttempt(s.URL)), pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
	if got := receive(t, protos, time.Second, "request"); got != "HTTP/2.0" {
		t.Fatalf("request came over %s, want HTTP/2.0", got)
	}
}
