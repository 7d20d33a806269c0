//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/proc"
)

// TestTLS3 is the secure path of the README with real processes: a CA and
// certificates made by `raftcron tls`, three nodes on TLS that require
// client certificates, a job applied with the CLI whose runs reach a
// downstream with rising tokens, and plaintext clients (gRPC, and the Raft
// byte of the plaintext protocol) closed without an answer.
func TestTLS3(t *testing.T) {
	bin := plainBinary.get(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	tlsRun(t, bin, "tls", "ca", "create", "--dir", certs)
	tlsRun(t, bin, "tls", "cert", "create", "--dir", certs, "--client", "e2e")

	sink := newTokenSink(t)
	addrs := loopbackAddrs(t, 6)
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("n%d=%s", i+1, addrs[i]))
	}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		tlsRun(t, bin, "tls", "cert", "create", "--dir", certs, "--node", id, "--addr", "127.0.0.1")
		startTLSNode(t, bin, dir, id, append([]string{"serve", "--id", id, "--data-dir", filepath.Join(dir, id),
			"--addr", addrs[i], "--http-addr", addrs[3+i], "--peers", strings.Join(peers, ","),
			"--tls-cert", filepath.Join(certs, "node-"+id+".pem"), "--tls-key", filepath.Join(certs, "node-"+id+"-key.pem"),
			"--tls-ca", filepath.Join(certs, "ca.pem"), "--tls-verify-clients"}, raftFlags...))
	}
	for i := range 3 {
		waitUntil(t, readyTimeout, fmt.Sprintf("n%d ready", i+1), func() bool { return httpOK("http://" + addrs[3+i] + "/readyz") })
	}

	job := filepath.Join(dir, "tick.yaml")
	body := fmt.Sprintf("name: tick\nschedule: \"@every 1s\"\nhttp: {url: %q}\n", sink.url)
	if err := os.WriteFile(job, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tlsRun(t, bin, "job", "apply", "-f", job, "--addr", addrs[1],
		"--ca-cert", filepath.Join(certs, "ca.pem"),
		"--client-cert", filepath.Join(certs, "client-e2e.pem"), "--client-key", filepath.Join(certs, "client-e2e-key.pem"))
	waitUntil(t, 30*time.Second, "3 runs with rising tokens", func() bool { return sink.rising() >= 3 })

	conn, err := grpc.NewClient(addrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext gRPC health check: %v, want Unavailable", err)
	}
	raw, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write([]byte{0x01, 0x00}) // the plaintext Raft byte, then an AppendEntries type
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, raw)
	var ne net.Error
	if n > 0 || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("plaintext Raft: %d bytes back, err %v; want the connection closed unanswered", n, err)
	}
}

func tlsRun(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = proc.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("raftcron %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// startTLSNode runs a node until the test ends; its log is kept in dir.
func startTLSNode(t *testing.T, bin, dir, id string, args []string) {
	t.Helper()
	logPath := filepath.Join(dir, id+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = proc.Environ()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("---- %s ----\n%s", id, logs)
		}
	})
}

func loopbackAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

func httpOK(url string) bool {
	resp, err := (&http.Client{Timeout: time.Second}).Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tokenSink is a downstream that counts attempts whose fencing token rises.
type tokenSink struct {
	url string
	// mu guards last and count.
	mu    sync.Mutex
	last  uint64
	count int
}

func newTokenSink(t *testing.T) *tokenSink {
	t.Helper()
	s := &tokenSink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/run"
	return s
}

func (s *tokenSink) serve(w http.ResponseWriter, r *http.Request) {
	token, err := strconv.ParseUint(r.Header.Get("X-Raftcron-Fencing-Token"), 10, 64)
	if err != nil {
		http.Error(w, "no token", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if token > s.last {
		s.last = token
		s.count++
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *tokenSink) rising() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}
