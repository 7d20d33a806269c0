package cli

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/pki"
)

// tlsCmd runs `raftcron tls ARGS...` in this process.
func tlsCmd(t *testing.T, args ...string) cliResult {
	t.Helper()
	code, stdout, stderr := runInProcess(t, append([]string{"tls"}, args...)...)
	return cliResult{Code: code, Stdout: stdout, Stderr: stderr}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTLSCommandsWriteAChainThatVerifies(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "certs")
	expectOK(t, tlsCmd(t, "ca", "create", "--dir", dir))
	expectOK(t, tlsCmd(t, "cert", "create", "--dir", dir, "--node", "n1", "--addr", "192.0.2.10:7001,node1.example"))
	expectOK(t, tlsCmd(t, "cert", "create", "--dir", dir, "--client", "alice", "--days", "30"))

	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(dir, "ca.pem")))
	node := readCert(t, filepath.Join(dir, "node-n1.pem"))
	for _, name := range []string{pki.NodeSAN, "node1.example", "192.0.2.10", "localhost", "127.0.0.1"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := node.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("node certificate as %s: %v", name, err)
			}
		}
	}
	client := readCert(t, filepath.Join(dir, "client-alice.pem"))
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if pki.IsNode(client) || client.Subject.CommonName != "alice" {
		t.Errorf("client certificate: IsNode %v, CN %q", pki.IsNode(client), client.Subject.CommonName)
	}
	if days := client.NotAfter.Sub(client.NotBefore).Hours() / 24; days < 30 || days > 31 {
		t.Errorf("client certificate valid for %.1f days, want 30", days)
	}
	for _, key := range []string{"ca-key.pem", "node-n1-key.pem", "client-alice-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %o, want 600", key, st.Mode().Perm())
		}
	}

	// Nothing is overwritten: above all not the CA key.
	caKey, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	expectFailure(t, tlsCmd(t, "ca", "create", "--dir", dir), "already exists")
	if again, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem")); !bytes.Equal(again, caKey) {
		t.Error("a second `tls ca create` replaced the CA key")
	}
	expectFailure(t, tlsCmd(t, "cert", "create", "--dir", dir, "--client", "alice"), "already exists")
	expectFailure(t, tlsCmd(t, "cert", "create", "--dir", t.TempDir(), "--client", "bob"), "tls ca create")
}

func TestTLSCertCreateRefusesBadRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	expectOK(t, tlsCmd(t, "ca", "create", "--dir", dir, "--days", "10"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "exactly one of --node ID or --client NAME"},
		{[]string{"--node", "n1", "--client", "alice"}, "exactly one of"},
		{[]string{"--client", "alice", "--addr", "10.0.0.1"}, "--addr is for --node"},
		{[]string{"--client", "alice", "--days", "0"}, "--days: must be between 1"},
		{[]string{"--node", "a/b"}, "--node/--addr: node ID"},
		{[]string{"--node", "n1", "--addr", "a b"}, "--node/--addr: host"},
		{[]string{"--client", "alice", "--days", "30"}, "--days 30: certificate would outlive its CA"},
	} {
		r := tlsCmd(t, append([]string{"cert", "create", "--dir", dir}, tc.args...)...)
		if r.Code != ExitUsage || !strings.Contains(r.Stderr, tc.want) || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("%v: %v; want exit %d and one line with %q", tc.args, r, ExitUsage, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("refused requests left files: %v", entries)
	}
}
