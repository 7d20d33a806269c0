package ops

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestMountServesBesideTheOperationsEndpoints(t *testing.T) {
	t.Parallel()
	_, s, _ := newTestServer(t)
	s.Mount("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "api "+r.URL.Path)
	}))
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	if code, body := get(t, hs.URL+"/v1/jobs"); code != http.StatusOK || body != "api /v1/jobs" {
		t.Fatalf("/v1/jobs = %d %q, want the mounted handler", code, body)
	}
	if code, _ := get(t, hs.URL+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez = %d after a mount, want 200", code)
	}
}

func TestHealthHandlerServesOnlyTheProbes(t *testing.T) {
	t.Parallel()
	n, s, _ := newTestServer(t)
	n.ready.Store(true)
	hs := httptest.NewServer(s.HealthHandler())
	defer hs.Close()
	for path, want := range map[string]int{"/livez": 200, "/readyz": 200, "/status": 404, "/metrics": 404, "/debug/pprof/": 404} {
		if code, _ := get(t, hs.URL+path); code != want {
			t.Errorf("%s = %d, want %d", path, code, want)
		}
	}
}

func TestServeSpeaksTLSWhenConfigured(t *testing.T) {
	t.Parallel()
	_, s, _ := newTestServer(t)
	cert, pool := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler(), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	done := make(chan error, 1)
	go func() { done <- Serve(srv, ln) }()
	defer func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve ended with %v", err)
		}
	}()

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + ln.Addr().String() + "/livez")
	if err != nil {
		t.Fatalf("GET over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET over TLS: %d (TLS: %v), want 200 over TLS", resp.StatusCode, resp.TLS != nil)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + ln.Addr().String() + "/livez"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS port")
		}
	}
}

// selfSigned is a certificate for 127.0.0.1 and the pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "n1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
