package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const year = 365 * 24 * time.Hour

func newTestCA(t *testing.T) (*CA, Pair) {
	t.Helper()
	p, err := NewCA(5 * year)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	ca, err := ParseCA(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatalf("ParseCA: %v", err)
	}
	return ca, p
}

func mustParse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	c, err := parseCert(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pool(t *testing.T, certPEM []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(certPEM) {
		t.Fatal("no CA certificate")
	}
	return p
}

func verifyAs(leaf *x509.Certificate, roots *x509.CertPool, name string, usage x509.ExtKeyUsage) error {
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func TestNodeCertChainsToItsCAForEveryNameAndBothRoles(t *testing.T) {
	t.Parallel()
	ca, caPair := newTestCA(t)
	p, err := ca.NodeCert("n1", []string{"10.0.0.5", "node1.example:7001", "node1.example"}, year)
	if err != nil {
		t.Fatalf("NodeCert: %v", err)
	}
	leaf := mustParse(t, p.CertPEM)
	roots := pool(t, caPair.CertPEM)
	for _, name := range []string{NodeSAN, "node1.example", "10.0.0.5", "localhost", "127.0.0.1"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if err := verifyAs(leaf, roots, name, usage); err != nil {
				t.Errorf("verify as %s (usage %v): %v", name, usage, err)
			}
		}
	}
	if err := verifyAs(leaf, roots, "other.example", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("node certificate verified for a host it does not name")
	}
	if !IsNode(leaf) || leaf.Subject.CommonName != "n1" {
		t.Errorf("IsNode %v, CN %q; want true, n1", IsNode(leaf), leaf.Subject.CommonName)
	}
	if len(leaf.DNSNames) != 3 { // NodeSAN, node1.example (once), localhost
		t.Errorf("DNS names %v: want each name once", leaf.DNSNames)
	}
	key, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || key.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", leaf.PublicKey)
	}
	caCert := mustParse(t, caPair.CertPEM)
	if !caCert.IsCA || !caCert.MaxPathLenZero {
		t.Errorf("CA: IsCA %v, MaxPathLenZero %v; want both", caCert.IsCA, caCert.MaxPathLenZero)
	}
}

func TestClientCertCarriesItsNameAndCannotPassForANode(t *testing.T) {
	t.Parallel()
	ca, caPair := newTestCA(t)
	p, err := ca.ClientCert("alice", year)
	if err != nil {
		t.Fatalf("ClientCert: %v", err)
	}
	leaf := mustParse(t, p.CertPEM)
	roots := pool(t, caPair.CertPEM)
	if err := verifyAs(leaf, roots, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("client certificate does not verify as a client: %v", err)
	}
	if err := verifyAs(leaf, roots, "", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("client certificate verified as a server")
	}
	if IsNode(leaf) || len(leaf.DNSNames)+len(leaf.IPAddresses) != 0 {
		t.Errorf("client certificate has SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if leaf.Subject.CommonName != "alice" {
		t.Errorf("CN %q, want alice", leaf.Subject.CommonName)
	}
}

func TestCertificateOfAnotherCADoesNotVerify(t *testing.T) {
	t.Parallel()
	ca, _ := newTestCA(t)
	_, otherPair := newTestCA(t)
	p, err := ca.NodeCert("n1", nil, year)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyAs(mustParse(t, p.CertPEM), pool(t, otherPair.CertPEM), NodeSAN, x509.ExtKeyUsageServerAuth); err == nil {
		t.Fatal("a certificate verified against a CA that did not sign it")
	}
}

func TestBadRequestsAreRefused(t *testing.T) {
	t.Parallel()
	ca, _ := newTestCA(t)
	for name, fn := range map[string]func() error{
		"empty node ID":     func() error { _, err := ca.NodeCert("", nil, year); return err },
		"node ID with '/'":  func() error { _, err := ca.NodeCert("a/b", nil, year); return err },
		"host with space":   func() error { _, err := ca.NodeCert("n1", []string{"a b"}, year); return err },
		"empty host":        func() error { _, err := ca.NodeCert("n1", []string{""}, year); return err },
		"client name ','":   func() error { _, err := ca.ClientCert("a,b", year); return err },
		"zero validity":     func() error { _, err := ca.ClientCert("alice", 0); return err },
		"CA zero validity":  func() error { _, err := NewCA(0); return err },
		"CA key mismatched": func() error { return mismatchedCA(t) },
	} {
		if err := fn(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}

func TestCertificateMayNotOutliveItsCA(t *testing.T) {
	t.Parallel()
	ca, _ := newTestCA(t)
	if _, err := ca.NodeCert("n1", nil, 6*year); !errors.Is(err, ErrOutlivesCA) {
		t.Fatalf("NodeCert for 6 years under a 5-year CA: %v, want ErrOutlivesCA", err)
	}
}

func mismatchedCA(t *testing.T) error {
	_, a := newTestCA(t)
	_, b := newTestCA(t)
	_, err := ParseCA(a.CertPEM, b.KeyPEM)
	return err
}

func TestWriteKeepsKeysPrivateAndOverwritesNothing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "certs")
	_, p := newTestCA(t)
	paths, err := Write(dir, "ca", p)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	for path, want := range map[string]os.FileMode{paths.Key: 0o600, paths.Cert: 0o644, dir: 0o700} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode %o, want %o", path, got, want)
		}
	}
	_, other := newTestCA(t)
	if _, err := Write(dir, "ca", other); !errors.Is(err, ErrExists) {
		t.Fatalf("second Write: %v, want ErrExists", err)
	}
	if got, _ := os.ReadFile(paths.Key); !bytes.Equal(got, p.KeyPEM) {
		t.Error("the CA key was overwritten")
	}
	// A lone key (say, a half-finished copy) also blocks the pair.
	if err := os.Remove(paths.Cert); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, "ca", other); !errors.Is(err, ErrExists) {
		t.Fatalf("Write over a lone key: %v, want ErrExists", err)
	}
	if _, err := os.Stat(paths.Cert); !errors.Is(err, os.ErrNotExist) {
		t.Error("Write wrote the certificate although the key existed")
	}
}

// writeNode writes CA and node pair into dir and returns the bundle's files.
func writeNode(t *testing.T, dir string, ca *CA, caPair Pair, id string) Files {
	t.Helper()
	caPaths, err := Write(dir, "ca", caPair)
	if err != nil && !errors.Is(err, ErrExists) {
		t.Fatal(err)
	}
	p, err := ca.NodeCert(id, nil, year)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := Write(dir, "node-"+id, p)
	if err != nil {
		t.Fatal(err)
	}
	return Files{Cert: paths.Cert, Key: paths.Key, CA: caPaths.Cert}
}

func TestBundleReloadSwapsAndKeepsTheOldOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, caPair := newTestCA(t)
	files := writeNode(t, dir, ca, caPair, "n1")
	b, err := LoadBundle(files)
	if err != nil {
		t.Fatalf("LoadBundle: %v", err)
	}
	first := b.Certificate().Leaf.SerialNumber

	// A renewed certificate in place of the old one.
	renewed := writeNode(t, t.TempDir(), ca, caPair, "n1")
	for _, f := range [][2]string{{renewed.Cert, files.Cert}, {renewed.Key, files.Key}} {
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	second := b.Certificate().Leaf.SerialNumber
	if second.Cmp(first) == 0 {
		t.Fatal("Reload kept the old certificate")
	}

	// A broken file: the reload fails and the bundle keeps what it had.
	if err := os.WriteFile(files.Cert, []byte("half a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(); err == nil {
		t.Fatal("Reload accepted a broken certificate file")
	}
	if got := b.Certificate().Leaf.SerialNumber; got.Cmp(second) != 0 {
		t.Error("a failed Reload changed the certificate")
	}
}

func TestBundleRefusesWhatANodeCannotUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, caPair := newTestCA(t)
	files := writeNode(t, dir, ca, caPair, "n1")

	client, err := ca.ClientCert("alice", year)
	if err != nil {
		t.Fatal(err)
	}
	clientPaths, err := Write(dir, "client-alice", client)
	if err != nil {
		t.Fatal(err)
	}
	_, foreign := newTestCA(t)
	foreignPaths, err := Write(t.TempDir(), "ca", foreign)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]Files{
		"client certificate": {Cert: clientPaths.Cert, Key: clientPaths.Key, CA: files.CA},
		"foreign CA":         {Cert: files.Cert, Key: files.Key, CA: foreignPaths.Cert},
		"key of another":     {Cert: files.Cert, Key: clientPaths.Key, CA: files.CA},
		"missing CA":         {Cert: files.Cert, Key: files.Key, CA: filepath.Join(dir, "nope.pem")},
		"CA not PEM":         {Cert: files.Cert, Key: files.Key, CA: files.Key},
	} {
		if _, err := LoadBundle(f); err == nil {
			t.Errorf("%s: LoadBundle accepted it", name)
		}
	}
}
