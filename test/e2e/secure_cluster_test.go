//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
)

// Bounds of the secure scenario's waits: upper limits on a loaded box.
const (
	secureCallTimeout = 10 * time.Second
	secureRunsTimeout = 30 * time.Second
)

// secureCluster is three `raftcron serve` processes on loopback as a
// production cluster runs them: TLS on the one port, --acl, exec left off
// and every dispatch signed with --fence-key-file; their jobs call a
// downstream that verifies the signatures before its fence admits a token.
type secureCluster struct {
	t        *testing.T
	bin, dir string
	certs    string      // the cluster's CA and certificates, as `raftcron tls` writes them
	keyFile  string      // --fence-key-file of every node
	keys     *fence.Keys // its keys
	// secretsKey is the --secrets-key-file of every node.
	secretsKey string
	lc         *localcluster.Cluster
	sink       *fencedSink
	mgmt       string // the management token made by acl bootstrap
	conn       *grpc.ClientConn
}

const secureNodes = 3

// secureOptions are what a scenario adds to the production flags.
type secureOptions struct {
	// args are more serve flags of every node.
	args []string
	// nodeArgs, if set, are more flags of one node, after args.
	nodeArgs func(n *localcluster.Node) []string
}

// newSecureCluster makes the certificates with `raftcron tls`, starts the
// cluster, waits until every node is ready and bootstraps the ACLs through
// the CLI.
func newSecureCluster(t *testing.T, o secureOptions) *secureCluster {
	t.Helper()
	c := &secureCluster{t: t, bin: plainBinary.get(t), dir: t.TempDir()}
	c.certs = filepath.Join(c.dir, "certs")
	c.keyFile = filepath.Join(c.dir, "fence.key")
	c.tool("tls", "ca", "create", "--dir", c.certs)
	c.keys = writeFenceKey(t, c.keyFile)
	c.secretsKey = filepath.Join(c.dir, "secrets.key")
	c.tool("secret", "keygen", "--out", c.secretsKey)
	c.sink = newFencedSink(t, c.keys)
	for i := range secureNodes {
		c.tool("tls", "cert", "create", "--dir", c.certs, "--node", fmt.Sprintf("n%d", i+1), "--addr", "127.0.0.1")
	}
	args := append([]string{"--acl", "--fence-key-file", c.keyFile, "--secrets-key-file", c.secretsKey}, raftFlags...)
	c.lc = launchReady(t, localcluster.Options{Binary: c.bin, Dir: c.dir, Nodes: secureNodes,
		TLS: true, TLSDir: c.certs, Args: append(args, o.args...), NodeArgs: o.nodeArgs})
	var boot struct{ Secret string }
	c.cliJSON("", &boot, "acl", "bootstrap")
	if boot.Secret == "" {
		t.Fatal("acl bootstrap -o json: no secret")
	}
	c.mgmt = boot.Secret
	c.conn = c.dial(c.addr(0))
	return c
}

// launchReady starts a cluster of o and waits until every node is ready.
// Cleanup kills the nodes, and prints their logs if the test failed.
func launchReady(t *testing.T, o localcluster.Options) *localcluster.Cluster {
	t.Helper()
	lc, err := localcluster.Launch(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lc.Crash()
		if t.Failed() {
			for _, n := range lc.Nodes() {
				logs, _ := os.ReadFile(n.LogPath)
				t.Logf("---- %s ----\n%s", n.ID, logs)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := lc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return lc
}

// addr and httpAddr are node i's gRPC/Raft port and its ops port (HTTPS
// with the node's certificate).
func (c *secureCluster) addr(i int) string     { return c.lc.Nodes()[i].Addr }
func (c *secureCluster) httpAddr(i int) string { return c.lc.Nodes()[i].HTTPAddr }

func (c *secureCluster) caCert() string            { return filepath.Join(c.certs, "ca.pem") }
func (c *secureCluster) nodeCert(id string) string { return filepath.Join(c.certs, "node-"+id+".pem") }
func (c *secureCluster) nodeKey(id string) string {
	return filepath.Join(c.certs, "node-"+id+"-key.pem")
}

// tool runs a raftcron command that needs no cluster (tls ...).
func (c *secureCluster) tool(args ...string) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = proc.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("raftcron %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// cli runs a client command against n1 over TLS with token (none if
// empty), the way a user's shell does: through RAFTCRON_* variables.
func (c *secureCluster) cli(token string, args ...string) (string, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(proc.Environ(), "RAFTCRON_ADDR="+c.addr(0), "RAFTCRON_CA_CERT="+c.caCert())
	if token != "" {
		cmd.Env = append(cmd.Env, "RAFTCRON_TOKEN="+token)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("raftcron %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// cliJSON runs a client command with -o json and decodes its output.
func (c *secureCluster) cliJSON(token string, v any, args ...string) {
	c.t.Helper()
	out, err := c.cli(token, append(args, "-o", "json")...)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("raftcron %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// createToken makes an ACL token with the management token and returns its
// secret.
func (c *secureCluster) createToken(name, role string, more ...string) string {
	c.t.Helper()
	var tok struct{ Secret string }
	c.cliJSON(c.mgmt, &tok, append([]string{"acl", "token", "create", "--name", name, "--role", role}, more...)...)
	if tok.Secret == "" {
		c.t.Fatalf("acl token create --name %s: no secret", name)
	}
	return tok.Secret
}

// applyJob writes a job file and applies it with the management token.
func (c *secureCluster) applyJob(name, body string) {
	c.t.Helper()
	path := filepath.Join(c.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.cli(c.mgmt, "job", "apply", "-f", path); err != nil {
		c.t.Fatal(err)
	}
}

// roots trusts the cluster's CA only.
func (c *secureCluster) roots() *x509.CertPool {
	c.t.Helper()
	pemBytes, err := os.ReadFile(c.caCert())
	if err != nil {
		c.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		c.t.Fatalf("%s: no certificate", c.caCert())
	}
	return roots
}

// dial is a TLS client of addr that presents no certificate: with --acl,
// its bearer token is all that tells the node who calls.
func (c *secureCluster) dial(addr string) *grpc.ClientConn {
	c.t.Helper()
	creds := credentials.NewTLS(&tls.Config{RootCAs: c.roots(), MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// callCtx bounds one call and sends token as the bearer (none if empty).
func callCtx(t *testing.T, token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), secureCallTimeout)
	t.Cleanup(cancel)
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// httpGet is the status of a GET on a node's HTTP port with token as the
// bearer (none if empty).
func (c *secureCluster) httpGet(addr, path, token string) int {
	c.t.Helper()
	return c.httpGetAs("", addr, path, token)
}

// httpGetAs is httpGet with host as the Host header (addr if empty).
func (c *secureCluster) httpGetAs(host, addr, path, token string) int {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.opsClient(secureCallTimeout).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// opsClient reaches the nodes' ops ports, HTTPS trusting the cluster's CA.
func (c *secureCluster) opsClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.roots(), MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}
	return &http.Client{Timeout: timeout, Transport: tr}
}

// servingSerial is the serial of the certificate addr presents to a new TLS
// handshake, verified against the cluster's CA.
func (c *secureCluster) servingSerial(addr string) (*big.Int, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: c.roots(), MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// certSerial is the serial of the first certificate in a PEM file.
func certSerial(t *testing.T, path string) *big.Int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cert.SerialNumber
}

// writeFenceKey writes a random key file, as the README's openssl line
// does, and returns the keys a downstream verifies with.
func writeFenceKey(t *testing.T, path string) *fence.Keys {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	line := base64.StdEncoding.EncodeToString(raw) + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := fence.LoadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// fencedSink is a downstream guarded as the fence package documents it:
// fence.Middleware with WithKeys over a Guard and a Dedupe, v2 signatures
// only. Only requests whose signature verifies reach the Guard, and only
// admitted ones reach the handler, which counts the tokens that rise.
type fencedSink struct {
	url   string
	guard *fence.MemoryGuard
	// mu guards last and count.
	mu    sync.Mutex
	last  uint64
	count int
}

// sinkDedupe is how many idempotency keys the sink remembers: far more than
// the scenario's runs.
const sinkDedupe = 10_000

func newFencedSink(t *testing.T, keys *fence.Keys) *fencedSink {
	t.Helper()
	s := &fencedSink{guard: fence.NewMemoryGuard()}
	f := fence.NewFence(s.guard, fence.NewMemoryDedupe(sinkDedupe))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: fence.Middleware(f, fence.WithKeys(keys))(http.HandlerFunc(s.apply)), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/run"
	return s
}

func (s *fencedSink) apply(w http.ResponseWriter, r *http.Request) {
	run, ok := fence.RunFromContext(r.Context())
	if !ok {
		http.Error(w, "no run in the context", http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	if run.Token > s.last {
		s.last = run.Token
		s.count++
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// rising is how many admitted runs carried a token above every earlier one,
// and the highest token admitted.
func (s *fencedSink) rising() (int, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count, s.last
}

// waitRising waits until n more runs with rising tokens than before arrive.
func (s *fencedSink) waitRising(t *testing.T, before, n int, what string) {
	t.Helper()
	testutil.WaitFor(t, secureRunsTimeout, what, func() bool {
		count, _ := s.rising()
		return count >= before+n
	})
}

// post sends a request as a forger would: the headers of run, with
// signature (none if empty).
func (s *fencedSink) post(run fence.Run, signature string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, s.url, nil)
	if err != nil {
		return 0, err
	}
	run.SetHeader(req.Header)
	if signature != "" {
		req.Header.Set(fence.HeaderSignature, signature)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

var errNoGrpcurl = errors.New("grpcurl not found in PATH or bin/tools (make grpcurl-tool)")

// grpcurlPath is grpcurl from PATH, else the one `make grpcurl-tool`
// installs.
func grpcurlPath() (string, error) {
	if p, err := exec.LookPath("grpcurl"); err == nil {
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "tools", "grpcurl")
	if _, err := os.Stat(p); err != nil {
		return "", errNoGrpcurl
	}
	return p, nil
}
