package dispatch

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func egress(t *testing.T, cidrs ...string) *policy.Egress {
	t.Helper()
	e, err := policy.NewEgress(cidrs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// bounded gives a a deadline, so that a check that lets the request through fails the
// test instead of hanging it on a listener that never answers.
func bounded(a Attempt) Attempt {
	a.Deadline = 3 * time.Second
	return a
}

func wantEgressDenied(t *testing.T, out Outcome, addr string) {
	t.Helper()
	wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
	if out.Reason != ReasonEgressDenied || !strings.Contains(out.Detail, "egress denied: "+addr) {
		t.Fatalf("outcome reason %q detail %q, want %s naming %s", out.Reason, out.Detail, ReasonEgressDenied, addr)
	}
}

// TestHTTPEgressDeniedBeforeConnect sends a webhook to a denied address where a
// listener waits, then connects to that listener itself: the first connection the
// listener accepts is the test's own, so the webhook never reached connect(2).
func TestHTTPEgressDeniedBeforeConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 (%v): this test needs the whole 127.0.0.0/8 on loopback", err)
	}
	defer ln.Close()
	ex := NewHTTPExecutorWith(HTTPConfig{Egress: egress(t, "127.0.0.2")})
	wantEgressDenied(t, ex.Execute(context.Background(), bounded(httpAttempt("http://"+ln.Addr().String()+"/hook"))), "127.0.0.2")

	probe, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if first.RemoteAddr().String() != probe.LocalAddr().String() {
		t.Fatalf("the listener first accepted %s, not the probe %s: the denied webhook connected", first.RemoteAddr(), probe.LocalAddr())
	}
}

// TestHTTPEgressDeniesCloudMetadataByDefault: the default ranges refuse the metadata
// services without trying them (a real attempt would wait for its timeout here):
// link-local, AWS's IPv6 endpoint, Alibaba Cloud's.
func TestHTTPEgressDeniesCloudMetadataByDefault(t *testing.T) {
	ex := NewHTTPExecutorWith(HTTPConfig{Egress: egress(t, policy.DefaultHTTPDeny...)})
	for _, url := range []string{"http://169.254.169.254/raftcron-egress-test", "http://[fe80::1]:8080/", "http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/latest/meta-data/", "http://100.100.100.200/latest/meta-data/", "http://[::ffff:100.100.100.200]/"} {
		start := time.Now()
		out := ex.Execute(context.Background(), bounded(httpAttempt(url)))
		wantState(t, out, pb.RunState_RUN_STATE_FAILED, "")
		if out.Reason != ReasonEgressDenied {
			t.Fatalf("%s: %q %q, want %s", url, out.Reason, out.Detail, ReasonEgressDenied)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: refused after %s: the refusal must not wait on the network", url, d)
		}
	}
}

// TestHTTPEgressChecksTheResolvedAddress: a name is judged by the address DNS gives it.
func TestHTTPEgressChecksTheResolvedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 (%v): this test needs the whole 127.0.0.0/8 on loopback", err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	resolver := fakeDNS(t, net.IPv4(169, 254, 169, 254))
	ex := NewHTTPExecutorWith(HTTPConfig{Egress: egress(t, policy.DefaultHTTPDeny...), Resolver: resolver})
	wantEgressDenied(t, ex.Execute(context.Background(), bounded(httpAttempt("http://metadata.raftcron.test/"))), "169.254.169.254")

	// The same name resolving to an allowed address is delivered.
	hits := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err == nil {
			hits <- req.Host
			_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
		}
	}()
	ex = NewHTTPExecutorWith(HTTPConfig{Egress: egress(t, policy.DefaultHTTPDeny...), Resolver: fakeDNS(t, net.IPv4(127, 0, 0, 2))})
	out := ex.Execute(context.Background(), bounded(httpAttempt("http://svc.raftcron.test:"+port+"/")))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "http 204 No Content")
	if host := receive(t, hits, 5*time.Second, "request"); host != "svc.raftcron.test:"+port {
		t.Fatalf("Host %q", host)
	}
}

func TestHTTPKeepsResponseOnlyWhenAsked(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "secret reply") })
	ex := NewHTTPExecutor(nil)
	out := ex.Execute(context.Background(), httpAttempt(s.URL))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
	if out.Output != nil {
		t.Fatalf("output %q kept without keep_response", out.Output)
	}
	out = ex.Execute(context.Background(), keepResponse(httpAttempt(s.URL)))
	if string(out.Output) != "secret reply" {
		t.Fatalf("output %q with keep_response, want the body", out.Output)
	}
}

// A signed webhook carries a v2 signature over exactly what was sent (method, URL as
// sent with its Host, body), which a v2-only fence accepts, and a request changed in any
// of them is refused. Until the cluster says every voter signs v2 the node signs v1,
// which only a fence told to accept v1 (for the upgrade) takes.
func TestHTTPSignsForFence(t *testing.T) {
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	v2Only, withV1 := fence.NewVerifier(keys), fence.NewVerifier(keys, fence.WithV1Signatures())
	type received struct {
		d   fence.Dispatch
		sig string
		err error
	}
	got := make(chan received, 1)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		run, perr := fence.FromHeader(r.Header)
		got <- received{fence.HTTPDispatch(run, r.Method, fence.ReceivedURL(r), body), r.Header.Get(fence.HeaderSignature), errors.Join(err, perr)}
	})
	a := httpAttempt(s.URL + "/hooks/charge?invoice=7")
	a.HTTP.Method, a.HTTP.Body = "PUT", `{"amount":"12.50"}`
	a.HTTP.Headers = map[string]string{"Host": "billing.example"}
	a.ScheduledAt = a.ScheduledAt.Add(700 * time.Millisecond) // slots are whole seconds downstream
	send := func(ex *HTTPExecutor) received {
		t.Helper()
		wantState(t, ex.Execute(context.Background(), a), pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
		r := receive(t, got, 5*time.Second, "request")
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	}

	var speaksV2 atomic.Bool
	signer := NewSigner(keys, speaksV2.Load)
	r := send(NewHTTPExecutorWith(HTTPConfig{Signer: signer}))
	if !strings.HasPrefix(r.sig, fence.SignaturePrefix) || withV1.Verify(r.d, r.sig) != nil || !errors.Is(v2Only.Verify(r.d, r.sig), fence.ErrBadSignature) {
		t.Fatalf("before the cluster signs v2: %q; want v1, taken only by a fence that accepts v1", r.sig)
	}
	speaksV2.Store(true)
	r = send(NewHTTPExecutorWith(HTTPConfig{Signer: signer}))
	if !strings.HasPrefix(r.sig, fence.SignatureV2Prefix) || r.d.URL != "http://billing.example/hooks/charge?invoice=7" {
		t.Fatalf("signature %q for %s, want v2 for the URL as sent", r.sig, r.d.URL)
	}
	if err := v2Only.Verify(r.d, r.sig); err != nil {
		t.Fatalf("a v2-only fence refused the signature: %v", err)
	}
	for what, change := range map[string]func(*fence.Dispatch){
		"method": func(d *fence.Dispatch) { d.Method = "POST" },
		"URL":    func(d *fence.Dispatch) { d.URL = "http://billing.example/hooks/refund?invoice=7" },
		"body":   func(d *fence.Dispatch) { d.BodySHA256[0] ^= 1 },
	} {
		d := r.d
		change(&d)
		if err := v2Only.Verify(d, r.sig); !errors.Is(err, fence.ErrBadSignature) {
			t.Errorf("the signature verified for another %s: %v", what, err)
		}
	}
	speaksV2.Store(false) // the cluster version never goes back: the signer does not ask again
	if r := send(NewHTTPExecutorWith(HTTPConfig{Signer: signer})); !strings.HasPrefix(r.sig, fence.SignatureV2Prefix) {
		t.Fatalf("signed %q after v2, want v2 still", r.sig)
	}
	// Without a signer no signature is sent, and fence says so.
	if r := send(NewHTTPExecutor(nil)); v2Only.Verify(r.d, r.sig) != fence.ErrUnsigned {
		t.Fatalf("unsigned request: %q", r.sig)
	}
}

// fakeDNS is a resolver whose every A query is answered with ip and every other query
// with no record, over an in-memory stream (RFC 1035 §4.2.2 framing).
func fakeDNS(t *testing.T, ip net.IP) *net.Resolver {
	t.Helper()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			go serveDNS(server, ip.To4())
			return client, nil
		},
	}
}

func serveDNS(c net.Conn, ip net.IP) {
	defer c.Close()
	var size [2]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return
	}
	q := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(c, q); err != nil || len(q) < 12 {
		return
	}
	end := 12 // the question: labels up to the root, then type and class
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5
	if end > len(q) {
		return
	}
	isA := binary.BigEndian.Uint16(q[end-4:end-2]) == 1
	resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:end]...)
	if isA {
		resp[7] = 1
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, ip...)
	}
	binary.BigEndian.PutUint16(size[:], uint16(len(resp)))
	_, _ = c.Write(append(size[:], resp...))
}
