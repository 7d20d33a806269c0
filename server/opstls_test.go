package server

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// opsURL is path on s's ops port, https when s speaks TLS.
func opsURL(s *Server, path string) string {
	if s.cfg.TLS != nil {
		return "https://" + s.HTTPAddr() + path
	}
	return "http://" + s.HTTPAddr() + path
}

// opsClient reaches s's ops port, trusting s's CA when it speaks TLS. A
// fresh transport per call: every request is a new handshake.
func opsClient(s *Server) *http.Client {
	tr := &http.Transport{}
	if s.cfg.TLS != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: s.cfg.TLS.Source.Roots()}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

// swapSource is a TLSSource whose material a test replaces, as a SIGHUP
// reload replaces a pki.Bundle's.
type swapSource struct {
	cur atomic.Pointer[cluster.TLSSource]
}

func (s *swapSource) set(src cluster.TLSSource)     { s.cur.Store(&src) }
func (s *swapSource) Certificate() *tls.Certificate { return (*s.cur.Load()).Certificate() }
func (s *swapSource) Roots() *x509.CertPool         { return (*s.cur.Load()).Roots() }

// tlsSourceFor is the source withTLS's option gives node id.
func tlsSourceFor(opt func(*Config), id string) cluster.TLSSource {
	c := Config{ID: id}
	opt(&c)
	return c.TLS.Source
}

func getOps(t *testing.T, client *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// Under TLS the ops port is HTTPS with the node's certificate: status,
// metrics and the JSON API with a bearer token are served over it, and a
// plain-HTTP request gets nothing of them.
func TestTheOpsPortServesHTTPSWithTheNodesCertificate(t *testing.T) {
	opt, roots, _ := withTLS(t)
	s := startCluster(t, 1, opt, func(c *Config) { c.ACL = true })[0]
	leaderOf(t, []*Server{s})

	resp, body := getOps(t, opsClient(s), opsURL(s, "/status"))
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /status over HTTPS: %d (TLS %v), want 200 over TLS", resp.StatusCode, resp.TLS != nil)
	}
	if got, want := resp.TLS.PeerCertificates[0].SerialNumber, s.cfg.TLS.Source.Certificate().Leaf.SerialNumber; got.Cmp(want) != 0 {
		t.Errorf("the ops port presented serial %s, want the node's %s", got.Text(16), want.Text(16))
	}
	if resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS version %x, want 1.2 or later", resp.TLS.Version)
	}
	if !strings.Contains(body, `"fencing_token"`) {
		t.Errorf("/status over HTTPS: %q, want the status document", body)
	}

	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + s.HTTPAddr() + "/status"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "fencing_token") {
			t.Fatalf("plain HTTP to the TLS ops port: %d %q, want it refused", resp.StatusCode, b)
		}
	}

	creds := credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost"})
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	boot, err := pb.NewAclServiceClient(conn).BootstrapAcl(t.Context(), &pb.BootstrapAclRequest{})
	if err != nil {
		t.Fatalf("BootstrapAcl: %v", err)
	}
	if code, doc := httpCall(t, s, "GET", "/v1/jobs", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/jobs over HTTPS without a token: %d %v, want 401", code, doc)
	}
	if code, doc := httpCall(t, s, "GET", "/v1/jobs", boot.GetSecret()); code != http.StatusOK {
		t.Errorf("GET /v1/jobs over HTTPS with the management token: %d %v, want 200", code, doc)
	}
}

// The ops port asks its source for the certificate on every handshake, so
// a reload (SIGHUP) reaches the next connection without a restart.
func TestTheOpsPortPresentsAReloadedCertificate(t *testing.T) {
	opt, _, _ := withTLS(t)
	src := &swapSource{}
	src.set(tlsSourceFor(opt, "n1"))
	s := startCluster(t, 1, func(c *Config) { c.TLS = &cluster.TLSConfig{Source: src} })[0]

	before, _ := getOps(t, opsClient(s), opsURL(s, "/livez"))
	renewed, _, _ := withTLS(t)
	next := tlsSourceFor(renewed, "n1")
	src.set(next)
	after, _ := getOps(t, opsClient(s), opsURL(s, "/livez"))
	old, cur := before.TLS.PeerCertificates[0].SerialNumber, after.TLS.PeerCertificates[0].SerialNumber
	if old.Cmp(cur) == 0 || cur.Cmp(next.Certificate().Leaf.SerialNumber) != 0 {
		t.Fatalf("after the reload the ops port presented serial %s (before %s), want the new %s",
			cur.Text(16), old.Text(16), next.Certificate().Leaf.SerialNumber.Text(16))
	}
}

// HealthAddr serves /livez and /readyz, and nothing else, in plain HTTP
// beside an HTTPS ops port, for probes that cannot speak TLS.
func TestHealthAddrServesOnlyTheProbesInPlainHTTP(t *testing.T) {
	opt, _, _ := withTLS(t)
	s := startCluster(t, 1, opt, func(c *Config) { c.HealthAddr = "127.0.0.1:0" })[0]
	if s.HealthAddr() == "" {
		t.Fatal("HealthAddr() is empty with Config.HealthAddr set")
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	testutil.WaitFor(t, 10*time.Second, "/readyz on the health port", func() bool {
		resp, err := plain.Get("http://" + s.HealthAddr() + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for path, want := range map[string]int{"/livez": 200, "/status": 404, "/metrics": 404, "/v1/jobs": 404, "/ui/": 404} {
		if resp, _ := getOps(t, plain, "http://"+s.HealthAddr()+path); resp.StatusCode != want {
			t.Errorf("health port %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// Without HealthAddr there is no probe port.
func TestNoHealthAddrNoProbePort(t *testing.T) {
	s := startCluster(t, 1)[0]
	if got := s.HealthAddr(); got != "" {
		t.Fatalf("HealthAddr() = %q without Config.HealthAddr, want empty", got)
	}
}
