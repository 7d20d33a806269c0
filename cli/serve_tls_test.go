package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// tlsFiles creates a CA, a certificate for each node and one client
// certificate with the tls commands, as an operator would.
type tlsFiles struct{ dir string }

func newTLSFiles(t *testing.T, nodes ...string) tlsFiles {
	t.Helper()
	f := tlsFiles{dir: t.TempDir()}
	expectOK(t, tlsCmd(t, "ca", "create", "--dir", f.dir))
	for _, id := range nodes {
		expectOK(t, tlsCmd(t, "cert", "create", "--dir", f.dir, "--node", id))
	}
	expectOK(t, tlsCmd(t, "cert", "create", "--dir", f.dir, "--client", "alice"))
	return f
}

func (f tlsFiles) path(name string) string { return filepath.Join(f.dir, name) }

// clientEnv is what `raftcron dev` tells a second terminal to export.
func (f tlsFiles) clientEnv() []string {
	return []string{"RAFTCRON_CA_CERT=" + f.path("ca.pem"),
		"RAFTCRON_CLIENT_CERT=" + f.path("client-alice.pem"), "RAFTCRON_CLIENT_KEY=" + f.path("client-alice-key.pem")}
}

func (f tlsFiles) clientTLS(t *testing.T) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.path("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(f.path("client-alice.pem"), f.path("client-alice-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// servedSerial is the serial of the certificate addr presents to a new
// connection.
func (f tlsFiles) servedSerial(t *testing.T, addr string) *big.Int {
	t.Helper()
	cfg := f.clientTLS(t)
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestServeTLSClusterForClientsWithCertificates runs a cluster the way the
// README's secure path sets it up: every connection TLS, clients need a
// certificate of the CA. It checks the CLI, reflection (what grpcurl
// uses), a certificate reload on SIGHUP and the debug port.
func TestServeTLSClusterForClientsWithCertificates(t *testing.T) {
	files := newTLSFiles(t, "n1", "n2", "n3")
	debugAddr := clustertest.FreeAddrs(t, 1)[0]
	c := clustertest.Start(t, localcluster.Options{Nodes: 3, Args: testRaft, TLS: true, TLSDir: files.dir,
		ClientName: "alice", VerifyClients: true,
		NodeArgs: func(n *localcluster.Node) []string {
			if n.ID == "n1" {
				return []string{"--debug-addr", debugAddr}
			}
			return nil
		}})
	n1 := c.Node("n1")
	job := testutil.WriteFile(t, "tick.yaml", "name: tick\nschedule: \"@hourly\"\nhttp: {url: \"http://127.0.0.1:9/\"}\n")

	t.Run("CLI with the CA and a client certificate", func(t *testing.T) {
		expectOK(t, runCLIEnv(t, files.clientEnv(), "", "job", "apply", "-f", job, "--addr", clustertest.Follower(t, c).Addr))
		r := expectOK(t, runCLIEnv(t, files.clientEnv(), "", "job", "get", "tick", "--addr", n1.Addr))
		if !strings.Contains(r.Stdout, "@hourly") {
			t.Errorf("job get: %s", r)
		}
	})
	t.Run("plaintext client refused", func(t *testing.T) {
		expectFailure(t, cliOn(t, n1, "", "job", "get", "tick"), "closed the connection", "--ca-cert")
	})
	t.Run("client without a certificate refused", func(t *testing.T) {
		env := []string{"RAFTCRON_CA_CERT=" + files.path("ca.pem")}
		expectFailure(t, runCLIEnv(t, env, "", "job", "get", "tick", "--addr", n1.Addr), "--client-cert")
	})
	t.Run("reflection over TLS", func(t *testing.T) {
		conn, err := grpc.NewClient(n1.Addr, grpc.WithTransportCredentials(credentials.NewTLS(files.clientTLS(t))))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), clustertest.CLITimeout)
		defer cancel()
		stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req := &reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("reflection: %v", err)
		}
		var names []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		if !strings.Contains(strings.Join(names, " "), "raftcron.v1.JobService") {
			t.Errorf("reflection lists %v, want raftcron.v1.JobService", names)
		}
	})
	t.Run("pprof only on the debug address", func(t *testing.T) {
		if code, _, err := n1.Get(context.Background(), "/debug/pprof/"); err != nil || code != http.StatusNotFound {
			t.Errorf("ops port /debug/pprof/: %d, %v; want 404", code, err)
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + debugAddr + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("--debug-addr /debug/pprof/: %d, want 200", resp.StatusCode)
		}
	})
	t.Run("SIGHUP reloads the certificate", func(t *testing.T) {
		before := files.servedSerial(t, n1.Addr)
		renewed := t.TempDir()
		for _, f := range []string{"ca.pem", "ca-key.pem"} {
			data, _ := os.ReadFile(files.path(f))
			if err := os.WriteFile(filepath.Join(renewed, f), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		expectOK(t, tlsCmd(t, "cert", "create", "--dir", renewed, "--node", "n1"))
		for _, f := range []string{"node-n1.pem", "node-n1-key.pem"} {
			if err := os.Rename(filepath.Join(renewed, f), files.path(f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := n1.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, clustertest.ReadyTimeout, "n1 to serve the renewed certificate", func() bool {
			return files.servedSerial(t, n1.Addr).Cmp(before) != 0
		})
		if !n1.Running() {
			t.Fatal("SIGHUP stopped n1")
		}
		expectOK(t, runCLIEnv(t, files.clientEnv(), "", "job", "get", "tick", "--addr", n1.Addr))
		testutil.WaitFor(t, clustertest.ReadyTimeout, "n1 to log the reload", func() bool {
			logs, _ := os.ReadFile(n1.LogPath)
			return strings.Contains(string(logs), "reloaded TLS certificate and CA")
		})
	})
}

// TestServeWarnsAboutInsecureAtStart: --insecure cannot be forgotten in a
// unit file, every start says what it gives up.
func TestServeWarnsAboutInsecureAtStart(t *testing.T) {
	c := startCluster(t, 1, "--insecure")
	n1 := c.Nodes()[0]
	testutil.WaitFor(t, clustertest.ReadyTimeout, "the --insecure warning in the log", func() bool {
		logs, _ := os.ReadFile(n1.LogPath)
		for _, line := range strings.Split(string(logs), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "--insecure") {
				return true
			}
		}
		return false
	})
}

// TestServeTLSWithACLs runs the other secure combination: TLS without
// client certificates, ACL tokens instead. A client that trusts the CA but
// holds no token is refused; the bootstrap and a write through a follower
// reach the leader over node-to-node forwarding, which needs no token
// because the node certificate vouches for it.
func TestServeTLSWithACLs(t *testing.T) {
	files := newTLSFiles(t, "n1", "n2", "n3")
	// --acl by hand: the test bootstraps the ACLs itself.
	c := clustertest.Start(t, localcluster.Options{Nodes: 3, TLS: true, TLSDir: files.dir,
		Args: append(slices.Clone(testRaft), "--acl")})
	follower := clustertest.Follower(t, c)
	env := []string{"RAFTCRON_CA_CERT=" + files.path("ca.pem")}
	cli := func(args ...string) cliResult {
		return runCLIEnv(t, env, "", append(args, "--addr", follower.Addr)...)
	}

	expectFailure(t, cli("job", "list"), "not authenticated")
	var boot tokenView
	r := expectOK(t, cli("acl", "bootstrap", "-o", "json"))
	if err := json.Unmarshal([]byte(r.Stdout), &boot); err != nil || boot.Secret == "" {
		t.Fatalf("acl bootstrap through a follower: %v\n%s", err, r.Stdout)
	}
	job := testutil.WriteFile(t, "tick.yaml", "name: tick\nschedule: \"@hourly\"\nhttp: {url: \"http://127.0.0.1:9/\"}\n")
	expectOK(t, cli("job", "apply", "-f", job, "--token", boot.Secret))
	if r := expectOK(t, cli("job", "get", "tick", "--token", boot.Secret)); !strings.Contains(r.Stdout, "@hourly") {
		t.Errorf("job get: %s", r)
	}

	// A worker trusts the CA and shows a worker token, across the hop
	// from the follower to the leader.
	var wt tokenView
	r = expectOK(t, cli("acl", "token", "create", "--name", "w1", "--role", "worker", "--pool", "batch", "-o", "json", "--token", boot.Secret))
	if err := json.Unmarshal([]byte(r.Stdout), &wt); err != nil || wt.Secret == "" {
		t.Fatalf("worker token: %v\n%s", err, r.Stdout)
	}
	startWorker(t, "--id", "w1", "--pool", "batch", "--tags", "region=eu", "--exec-allow", "/bin/sh",
		"--addr", follower.Addr, "--ca-cert", files.path("ca.pem"), "--token", wt.Secret)
	expectOK(t, cli("job", "apply", "-f", testutil.WriteFile(t, "report.yaml", workerJob), "--token", boot.Secret))
	expectOK(t, cli("job", "trigger", "report", "--token", boot.Secret))
	testutil.WaitFor(t, 30*time.Second, "the run to succeed on the worker", func() bool {
		var runs []runView
		r := cli("run", "list", "--job", "report", "-o", "json", "--token", boot.Secret)
		return r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &runs) == nil && len(runs) > 0 && runs[0].State == "succeeded"
	})
}
