//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/raftcron/raftcron/fence"
)

// lateNetwork stands between the nodes and a receiver and forwards every request as it
// comes, except the one it is told to hold: that one waits until released and then
// goes on whether or not its sender still waits for it, as a request the network
// delayed would. It keeps the Host header, so the receiver sees the URL the node sent
// to and signed.
type lateNetwork struct {
	url   string // where the job sends: http://127.0.0.1:PORT
	proxy *httputil.ReverseProxy
	done  chan struct{} // closed when the test ends: held requests are dropped

	// mu guards armed.
	mu    sync.Mutex
	armed chan *heldRequest // the next request goes there, then armed is nil
}

// heldRequest is a request the network holds: its token, and the receiver's answer
// once released.
type heldRequest struct {
	token   uint64
	release chan struct{}
	answer  chan heldAnswer
}

type heldAnswer struct {
	status int
	body   string
}

func newLateNetwork(t *testing.T, receiver string) *lateNetwork {
	t.Helper()
	target, err := url.Parse("http://" + receiver)
	if err != nil {
		t.Fatal(err)
	}
	n := &lateNetwork{done: make(chan struct{}), proxy: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: n}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(n.done)
		_ = srv.Close()
	})
	n.url = "http://" + ln.Addr().String()
	return n
}

// holdNext makes the network hold the next request; it arrives on the channel.
func (n *lateNetwork) holdNext() <-chan *heldRequest {
	ch := make(chan *heldRequest, 1)
	n.mu.Lock()
	n.armed = ch
	n.mu.Unlock()
	return ch
}

func (n *lateNetwork) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	armed := n.armed
	n.armed = nil
	n.mu.Unlock()
	if armed == nil {
		n.proxy.ServeHTTP(w, r)
		return
	}
	// Read the whole request now: it is on the wire, and its sender may go away.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	token, _ := strconv.ParseUint(r.Header.Get(fence.HeaderFencingToken), 10, 64)
	h := &heldRequest{token: token, release: make(chan struct{}), answer: make(chan heldAnswer, 1)}
	armed <- h
	select {
	case <-h.release:
	case <-n.done:
		return
	}
	late := r.Clone(context.WithoutCancel(r.Context()))
	late.Body = io.NopCloser(bytes.NewReader(body))
	rec := &answerRecorder{ResponseWriter: w}
	n.proxy.ServeHTTP(rec, late)
	h.answer <- heldAnswer{status: rec.status, body: strings.TrimSpace(rec.body.String())}
}

// answerRecorder passes an answer on to its sender, if it still listens, and keeps it.
type answerRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *answerRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *answerRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(p)
	_, _ = r.ResponseWriter.Write(p) // the sender may have gone
	return len(p), nil
}
