package localcluster

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/raftcron/raftcron/pki"
)

// certValidity: a CA Start makes lives in the cluster's directory and dies
// with it.
const certValidity = 7 * 24 * time.Hour

// TLSFiles says where a cluster's TLS material is, named as `raftcron tls`
// names it.
type TLSFiles struct {
	// Dir holds every file.
	Dir string
	// CA is the CA certificate: every node's --tls-ca, a client's
	// --ca-cert. CAKey is its key.
	CA, CAKey string
	// ClientCert and ClientKey are a client certificate of the CA
	// (--client-cert, --client-key); empty if Dir holds none named
	// Options.ClientName.
	ClientCert, ClientKey string
}

// Node is where node id's certificate and key are.
func (f TLSFiles) Node(id string) pki.Paths { return pki.PathsOf(f.Dir, "node-"+id) }

// tlsFiles finds the material in dir, or (made) writes a throwaway CA and
// a certificate for every node of ids and one client into it.
func tlsFiles(dir string, made bool, ids []string, client string) (TLSFiles, error) {
	ca := pki.PathsOf(dir, "ca")
	f := TLSFiles{Dir: dir, CA: ca.Cert, CAKey: ca.Key}
	cp := pki.PathsOf(dir, "client-"+client)
	if made {
		if err := writeCA(dir, ids, client); err != nil {
			return f, fmt.Errorf("cluster certificates: %w", err)
		}
	}
	if _, err := os.Stat(cp.Cert); err == nil {
		f.ClientCert, f.ClientKey = cp.Cert, cp.Key
	}
	return f, nil
}

func writeCA(dir string, ids []string, client string) error {
	pair, err := pki.NewCA(certValidity + time.Hour) // outlives what it signs
	if err != nil {
		return err
	}
	if _, err := pki.Write(dir, "ca", pair); err != nil {
		return err
	}
	ca, err := pki.ParseCA(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := writeNodeCert(ca, dir, id); err != nil {
			return err
		}
	}
	p, err := ca.ClientCert(client, certValidity)
	if err != nil {
		return err
	}
	_, err = pki.Write(dir, "client-"+client, p)
	return err
}

// writeNodeCert issues node id's certificate. The nodes listen on
// 127.0.0.1, which every node certificate names.
func writeNodeCert(ca *pki.CA, dir, id string) error {
	p, err := ca.NodeCert(id, nil, certValidity)
	if err != nil {
		return err
	}
	_, err = pki.Write(dir, "node-"+id, p)
	return err
}

// issueNode writes node id's certificate, signed with the CA's key.
func (f TLSFiles) issueNode(id string) error {
	ca, err := pki.ReadCA(pki.Paths{Cert: f.CA, Key: f.CAKey})
	if err != nil {
		return fmt.Errorf("certificate of %s: %w", id, err)
	}
	return writeNodeCert(ca, f.Dir, id)
}

// roots trusts the cluster's CA alone.
func (f TLSFiles) roots() (*x509.CertPool, error) {
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", f.CA)
	}
	return roots, nil
}

// nodeFlags are a node's TLS flags.
func (f TLSFiles) nodeFlags(id string) []string {
	p := f.Node(id)
	return []string{"--tls-cert", p.Cert, "--tls-key", p.Key, "--tls-ca", f.CA}
}

// defaultTLSDir is where Start writes the material it makes.
func defaultTLSDir(dir string) string { return filepath.Join(dir, "tls") }
