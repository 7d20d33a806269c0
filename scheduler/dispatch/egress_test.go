package dispatch

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// countingServer is a downstream on 127.0.0.1 that counts the requests it
// gets, and its port.
func countingServer(t *testing.T) (hits *atomic.Int32, port string) {
	t.Helper()
	hits = &atomic.Int32{}
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	_, port, _ = net.SplitHostPort(s.Listener.Addr().String())
	return hits, port
}

// TestHTTPEgressOffLoopbackRefusesThisHost: on a node whose --addr is not
// loopback, no spelling of this host reaches a service on its loopback —
// IPv4-mapped, unspecified, a name resolving there — until --http-allow
// reopens the range.
func TestHTTPEgressOffLoopbackRefusesThisHost(t *testing.T) {
	hits, port := countingServer(t)
	offLoopback := egress(t, policy.DefaultHTTPDeny...).ForNode(policy.Self{Loopback: false})
	ex := NewHTTPExecutorWith(HTTPConfig{Egress: offLoopback, Resolver: fakeDNS(t, net.IPv4(127, 0, 0, 1))})
	for url, addr := range map[string]string{
		"http://127.0.0.1:" + port + "/status":          "127.0.0.1",
		"http://[::ffff:127.0.0.1]:" + port + "/status": "127.0.0.1",
		"http://0.0.0.0:" + port + "/status":            "0.0.0.0",
		"http://[::]:" + port + "/status":               "::",
		"http://[::1]:" + port + "/status":              "::1",
		"http://rebound.raftcron.test:" + port + "/":    "127.0.0.1",
	} {
		wantEgressDenied(t, ex.Execute(context.Background(), bounded(httpAttempt(url))), addr)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback service got %d requests", n)
	}

	allowed, err := offLoopback.WithAllow([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	ex = NewHTTPExecutorWith(HTTPConfig{Egress: allowed})
	out := ex.Execute(context.Background(), bounded(httpAttempt("http://[::ffff:127.0.0.1]:"+port+"/")))
	wantState(t, out, pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
	if n := hits.Load(); n != 1 {
		t.Fatalf("--http-allow 127.0.0.0/8: the service got %d requests, want 1", n)
	}
}

// TestHTTPEgressRefusesTheNodesOwnPorts: even a node on loopback, which
// reaches other loopback services, never dials its own ports.
func TestHTTPEgressRefusesTheNodesOwnPorts(t *testing.T) {
	own, ownPort := countingServer(t)
	other, otherPort := countingServer(t)
	p, err := strconv.ParseUint(ownPort, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	e, err := egress(t, policy.DefaultHTTPDeny...).WithAllow([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	ex := NewHTTPExecutorWith(HTTPConfig{Egress: e.ForNode(policy.Self{Loopback: true, Ports: []uint16{uint16(p)}})})
	for host, addr := range map[string]string{"127.0.0.1": "127.0.0.1", "[::ffff:127.0.0.1]": "127.0.0.1", "0.0.0.0": "0.0.0.0", "[::]": "[::]"} {
		out := ex.Execute(context.Background(), bounded(keepResponse(httpAttempt("http://"+host+":"+ownPort+"/debug/pprof/cmdline"))))
		wantEgressDenied(t, out, addr)
		if !strings.Contains(out.Detail, "this node's own port") {
			t.Errorf("%s: detail %q does not say it is the node's own port", host, out.Detail)
		}
	}
	wantState(t, ex.Execute(context.Background(), bounded(httpAttempt("http://127.0.0.1:"+otherPort+"/"))), pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
	if own.Load() != 0 || other.Load() != 1 {
		t.Fatalf("the node's own port got %d requests (want 0), another port %d (want 1)", own.Load(), other.Load())
	}
}
