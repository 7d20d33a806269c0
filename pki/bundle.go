package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// Files names a node's TLS material: its certificate and key and the CA
// its peers and clients must chain to.
type Files struct{ Cert, Key, CA string }

// Bundle is a node's current certificate and CA. Reload swaps both at once,
// so every handshake sees a matching pair; handshakes read it through
// Certificate and Roots and never hold on to it.
type Bundle struct {
	files Files
	cur   atomic.Pointer[material]
}

type material struct {
	cert  *tls.Certificate
	roots *x509.CertPool
}

// LoadBundle reads files and checks them as a node will use them: the key
// matches the certificate, the certificate is a node certificate, chains to
// the CA and is valid now.
func LoadBundle(files Files) (*Bundle, error) {
	b := &Bundle{files: files}
	if err := b.Reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// Reload reads the files again. On any error the bundle keeps what it had,
// so a half-copied certificate never takes a node off its cluster.
func (b *Bundle) Reload() error {
	m, err := load(b.files, time.Now())
	if err != nil {
		return err
	}
	b.cur.Store(m)
	return nil
}

// Certificate is the node's current certificate, with its leaf parsed.
func (b *Bundle) Certificate() *tls.Certificate { return b.cur.Load().cert }

// Roots is the current CA pool.
func (b *Bundle) Roots() *x509.CertPool { return b.cur.Load().roots }

func load(f Files, now time.Time) (*material, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s and key %s: %w", f.Cert, f.Key, err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", f.CA, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("CA %s: %w: no PEM certificate in it", f.CA, ErrInvalid)
	}
	if cert.Leaf == nil { // GODEBUG=x509keypairleaf=0 leaves it unparsed
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certificate %s: %w: %v", f.Cert, ErrInvalid, err)
		}
	}
	leaf := cert.Leaf
	if !IsNode(leaf) {
		return nil, fmt.Errorf("certificate %s: %w: it is not a node certificate (no DNS SAN %s); create one with `raftcron tls cert create --node ID`",
			f.Cert, ErrInvalid, NodeSAN)
	}
	// A node serves with its certificate and dials its peers with it.
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if err := verify(leaf, cert.Certificate[1:], roots, usage, now); err != nil {
			return nil, fmt.Errorf("certificate %s does not verify against CA %s: %w", f.Cert, f.CA, err)
		}
	}
	return &material{cert: &cert, roots: roots}, nil
}

func verify(leaf *x509.Certificate, chain [][]byte, roots *x509.CertPool, usage x509.ExtKeyUsage, now time.Time) error {
	inter := x509.NewCertPool()
	for _, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return errors.Join(ErrInvalid, err)
		}
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage},
	})
	return err
}
