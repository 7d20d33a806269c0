package fence

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// TestSignatureV2WireForm pins the v2 message of an HTTP dispatch and of an exec run, and
// the encoding: services in other languages compute exactly this.
func TestSignatureV2WireForm(t *testing.T) {
	keys := mustKeys(t, newKey+"\n"+oldKey)
	body := []byte(`{"amount":5}`)
	for name, c := range map[string]struct {
		d   Dispatch
		msg string
	}{
		"http": {HTTPDispatch(sampleRun(), "POST", "https://billing.example/charge?id=7", body),
			"raftcron-signature-v2\nmethod:POST\nurl:https://billing.example/charge?id=7\n" +
				"body-sha256:7e84cbf0f7a7c92c037058665d66152f8eb8580ab2534e52c877bccceb9cc7bf\n" +
				"job:nightly-billing\nrun-id:r-0001\ntoken:42\nscheduled-at:2026-11-22T01:02:03Z\n" +
				"attempt:2\nidempotency-key:nightly-billing/2026-11-22T01:02:03Z"},
		"exec": {ExecDispatch(sampleRun(), nil),
			"raftcron-signature-v2\n" +
				"body-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" +
				"job:nightly-billing\nrun-id:r-0001\ntoken:42\nscheduled-at:2026-11-22T01:02:03Z\n" +
				"attempt:2\nidempotency-key:nightly-billing/2026-11-22T01:02:03Z"},
	} {
		if got := string(CanonicalV2(c.d)); got != c.msg {
			t.Errorf("%s: CanonicalV2 =\n%s\nwant\n%s", name, got, c.msg)
		}
		h := hmac.New(sha256.New, []byte(newKey))
		h.Write([]byte(c.msg))
		want := "v2=" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
		if got, err := keys.SignV2(c.d); err != nil || got != want {
			t.Errorf("%s: SignV2 = %q, %v, want %q: HMAC-SHA256 with the first key", name, got, err, want)
		}
	}
}

func TestSignV2RefusesControlCharacters(t *testing.T) {
	keys := mustKeys(t, newKey)
	for name, d := range map[string]Dispatch{
		"newline in the URL":    HTTPDispatch(sampleRun(), "POST", "https://a.example/x\njob:other", nil),
		"newline in the method": HTTPDispatch(sampleRun(), "POST\nurl:x", "https://a.example/", nil),
		"method without a URL":  HTTPDispatch(sampleRun(), "POST", "", nil),
	} {
		if sig, err := keys.SignV2(d); err == nil {
			t.Errorf("%s: signed %q", name, sig)
		}
		if err := keys.VerifyV2(d, "v2="+strings.Repeat("A", 43)); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: VerifyV2 = %v, want ErrBadSignature", name, err)
		}
	}
}

// v2Target is a fenced server whose handler records the body it was given.
type v2Target struct {
	*httpTarget
	body atomic.Pointer[string]
}

func newV2Target(t *testing.T, opts ...Option) *v2Target {
	t.Helper()
	return newV2TargetOn(t, nil, opts...)
}

// listen returns a loopback listener and its URL, for a target whose options name it.
func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

func newV2TargetOn(t *testing.T, ln net.Listener, opts ...Option) *v2Target {
	t.Helper()
	vt := &v2Target{httpTarget: &httpTarget{fence: NewFence(NewMemoryGuard(), NewMemoryDedupe(100))}}
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	vt.srv = httptest.NewUnstartedServer(Middleware(vt.fence, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vt.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		s := string(b)
		vt.body.Store(&s)
		io.WriteString(w, "applied")
	})))
	if ln != nil {
		vt.srv.Listener.Close()
		vt.srv.Listener = ln
	}
	vt.srv.Start()
	t.Cleanup(vt.srv.Close)
	return vt
}

// send signs a request to path with keys, as a node does, then lets tamper change it
// before it is sent.
func (vt *v2Target) send(t *testing.T, keys *Keys, token uint64, path, body string, tamper func(*http.Request)) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, vt.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	run := sampleRun()
	run.Token = token
	run.SetHeader(req.Header)
	sig, err := keys.SignV2(HTTPDispatch(run, req.Method, SentURL(req), []byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(HeaderSignature, sig)
	if tamper != nil {
		tamper(req)
	}
	resp, err := vt.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, raw: strings.TrimSpace(string(raw))}
}

func TestMiddlewareV2CoversMethodURLAndBody(t *testing.T) {
	keys := mustKeys(t, newKey)
	vt := newV2Target(t, WithKeys(keys))
	replaceBody := func(b string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(b)), int64(len(b))
		}
	}
	for name, tamper := range map[string]func(*http.Request){
		"body changed":   replaceBody(`{"amount":99999}`),
		"method changed": func(r *http.Request) { r.Method = http.MethodPut },
		"another path":   func(r *http.Request) { r.URL.Path = "/refund" },
		"another query":  func(r *http.Request) { r.URL.RawQuery = "id=8" },
		"another Host":   func(r *http.Request) { r.Host = "billing.example" },
		"signed v1 only": func(r *http.Request) { r.Header.Set(HeaderSignature, keys.Sign(sampleRun())) },
		"token raised":   func(r *http.Request) { r.Header.Set(HeaderFencingToken, "99") },
		"signature cut":  func(r *http.Request) { r.Header.Set(HeaderSignature, r.Header.Get(HeaderSignature)[:20]) },
	} {
		if r := vt.send(t, keys, 1<<62, "/charge?id=7", `{"amount":5}`, tamper); r.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", name, r.status, r.raw)
		}
	}
	if n := vt.calls.Load(); n != 0 {
		t.Fatalf("refused requests reached the handler %d times", n)
	}
	if r := vt.send(t, keys, 42, "/charge?id=7", `{"amount":5}`, nil); r.status != http.StatusOK || r.raw != "applied" {
		t.Fatalf("genuine: %d %s", r.status, r.raw)
	}
	if got := *vt.body.Load(); got != `{"amount":5}` {
		t.Fatalf("the handler read body %q, want the one that was signed", got)
	}
}

func TestMiddlewareV1OnlyWhenTold(t *testing.T) {
	keys := mustKeys(t, newKey)
	v1 := func(r *http.Request) { r.Header.Set(HeaderSignature, keys.Sign(sampleRun())) }
	if r := newV2Target(t, WithKeys(keys)).send(t, keys, 42, "/", "", v1); r.status != http.StatusUnauthorized {
		t.Fatalf("v1 to a v2-only service: %d %s, want 401", r.status, r.raw)
	}
	vt := newV2Target(t, WithKeys(keys), WithV1Signatures())
	if r := vt.send(t, keys, 42, "/", "", v1); r.status != http.StatusOK {
		t.Fatalf("v1 during the upgrade: %d %s, want 200", r.status, r.raw)
	}
	if r := vt.send(t, keys, 43, "/", "", nil); r.status != http.StatusOK {
		t.Fatalf("v2 during the upgrade: %d %s, want 200", r.status, r.raw)
	}
}

func TestMiddlewareWithJobsAndURLPrefix(t *testing.T) {
	keys := mustKeys(t, newKey)
	vt := newV2Target(t, WithKeys(keys), WithJobs("payroll"))
	if r := vt.send(t, keys, 1<<62, "/", "", nil); r.status != http.StatusForbidden {
		t.Fatalf("a job not accepted: %d %s, want 403", r.status, r.raw)
	}
	vt = newV2Target(t, WithKeys(keys), WithJobs("payroll", "nightly-billing"))
	if r := vt.send(t, keys, 42, "/", "", nil); r.status != http.StatusOK {
		t.Fatalf("an accepted job: %d %s, want 200", r.status, r.raw)
	}

	ln, url := listen(t)
	pinned := newV2TargetOn(t, ln, WithKeys(keys), WithURLPrefix(url+"/hooks/"))
	// A genuine request the nodes sent to another service, replayed to pinned with that
	// service's Host header so that the signature still matches: only the prefix refuses it.
	if r := pinned.send(t, keys, 1<<62, "/hooks/charge", "", func(r *http.Request) {
		r.Host = "other.example"
		run, _ := FromHeader(r.Header)
		sig, _ := keys.SignV2(HTTPDispatch(run, r.Method, SentURL(r), nil))
		r.Header.Set(HeaderSignature, sig)
	}); r.status != http.StatusForbidden {
		t.Fatalf("replayed from another service: %d %s, want 403", r.status, r.raw)
	}
	if r := pinned.send(t, keys, 1<<62, "/other", "", nil); r.status != http.StatusForbidden {
		t.Fatalf("a URL outside the prefix: %d %s, want 403", r.status, r.raw)
	}
	if r := pinned.send(t, keys, 42, "/hooks/charge", "", nil); r.status != http.StatusOK {
		t.Fatalf("a URL under the prefix: %d %s, want 200", r.status, r.raw)
	}
	if h, _ := pinned.fence.Guard.Highest(context.Background(), "nightly-billing"); h != 42 {
		t.Fatalf("high-water mark %d after refused 2^62 tokens, want 42", h)
	}
}

func TestMiddlewareWithRequestURLBehindAProxy(t *testing.T) {
	keys := mustKeys(t, newKey)
	const public = "https://billing.example"
	vt := newV2Target(t, WithKeys(keys), WithURLPrefix(public+"/"),
		WithRequestURL(func(r *http.Request) string { return public + r.URL.RequestURI() }))
	// The node signed the public URL; the proxy forwarded it to the service's address.
	signedForPublic := func(r *http.Request) {
		run, _ := FromHeader(r.Header)
		sig, _ := keys.SignV2(HTTPDispatch(run, r.Method, public+r.URL.RequestURI(), nil))
		r.Header.Set(HeaderSignature, sig)
	}
	if r := vt.send(t, keys, 42, "/charge", "", signedForPublic); r.status != http.StatusOK {
		t.Fatalf("through the proxy: %d %s, want 200", r.status, r.raw)
	}
}

func TestInterceptorVerifiesTheRunOnlyForm(t *testing.T) {
	keys := mustKeys(t, newKey)
	signed := func(token uint64) metadata.MD {
		r := sampleRun()
		r.Token = token
		md := r.Metadata()
		sig, _ := keys.SignV2(ExecDispatch(r, nil))
		md.Set("x-raftcron-signature", sig)
		return md
	}
	gt := newGRPCTarget(t, WithKeys(keys), WithJobs("payroll"))
	if code, msg := gt.check(signed(1<<62), "billing"); code != codes.PermissionDenied {
		t.Fatalf("a job not accepted: %v %q, want PermissionDenied", code, msg)
	}
	gt = newGRPCTarget(t, WithKeys(keys))
	if code, msg := gt.check(signed(42), "billing"); code != codes.OK {
		t.Fatalf("genuine: %v %q", code, msg)
	}
}

func TestVerifierExecRun(t *testing.T) {
	keys := mustKeys(t, newKey)
	run := sampleRun()
	sig, err := keys.SignV2(ExecDispatch(run, nil))
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(keys, WithJobs("nightly-billing"), WithURLPrefix("https://billing.example/"))
	if err := v.Verify(ExecDispatch(run, nil), sig); err != nil {
		t.Fatalf("genuine exec run: %v", err)
	}
	if err := v.Verify(ExecDispatch(run, []byte("payload")), sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("another payload: %v, want ErrBadSignature", err)
	}
	if err := v.Verify(HTTPDispatch(run, "POST", "https://billing.example/", nil), sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("exec signature over HTTP: %v, want ErrBadSignature", err)
	}
	if err := NewVerifier(keys, WithJobs("payroll")).Verify(ExecDispatch(run, nil), sig); !errors.Is(err, ErrNotAccepted) {
		t.Fatalf("another job's run: %v, want ErrNotAccepted", err)
	}
}

func TestMiddlewareRefusesABodyTooLargeToCheck(t *testing.T) {
	keys := mustKeys(t, newKey)
	vt := newV2Target(t, WithKeys(keys))
	if r := vt.send(t, keys, 42, "/", strings.Repeat("x", MaxSignedBodyLen+1), nil); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over %d bytes: %d %s, want 413", MaxSignedBodyLen, r.status, r.raw)
	}
	if n := vt.calls.Load(); n != 0 {
		t.Fatalf("the handler was called %d times", n)
	}
}
