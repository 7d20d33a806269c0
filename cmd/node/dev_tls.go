package main

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftcron/raftcron/pki"
)

// devCertValidity: the CA lives in the demo's data dir and dies with it.
const devCertValidity = 7 * 24 * time.Hour

// devClientName is the common name of the demo's client certificate.
const devClientName = "dev"

// devTLS is the throwaway CA of one dev run and the certificates it issued:
// one per node, and one client certificate for dev itself and the user's
// second terminal. The nodes verify clients and require ACL tokens, so the
// demo shows the secure setup of DESIGN §11 end to end.
type devTLS struct {
	ca, client pki.Paths
}

// newDevTLS writes the CA and every certificate into DIR/tls and gives each
// node its TLS flags and --acl.
func newDevTLS(dir string, nodes []*devNode) (*devTLS, error) {
	tlsDir := filepath.Join(dir, "tls")
	pair, err := pki.NewCA(devCertValidity + time.Hour) // outlives what it signs

	if err != nil {
		return nil, err
	}
	caPaths, err := pki.Write(tlsDir, "ca", pair)
	if err != nil {
		return nil, err
	}
	ca, err := pki.ParseCA(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pair.CertPEM)
	for _, n := range nodes {
		// The demo listens on 127.0.0.1, which every node certificate names.
		p, err := ca.NodeCert(n.id, nil, devCertValidity)
		if err != nil {
			return nil, err
		}
		paths, err := pki.Write(tlsDir, "node-"+n.id, p)
		if err != nil {
			return nil, err
		}
		n.secureArgs = []string{"--" + flagTLSCert, paths.Cert, "--" + flagTLSKey, paths.Key,
			"--" + flagTLSCA, caPaths.Cert, "--" + flagTLSVerifyClients, "--" + flagACL}
		n.opsRoots = roots // the ops port is HTTPS with the node's certificate
	}
	client, err := ca.ClientCert(devClientName, devCertValidity)
	if err != nil {
		return nil, err
	}
	clientPaths, err := pki.Write(tlsDir, "client-"+devClientName, client)
	if err != nil {
		return nil, err
	}
	return &devTLS{ca: caPaths, client: clientPaths}, nil
}

// auth is how dev's own client (and the user's) reaches the nodes with
// token; the zero value is plaintext (dev --insecure).
func (t *devTLS) auth(token string) clientAuth {
	if t == nil {
		return clientAuth{}
	}
	return clientAuth{caCert: t.ca.Cert, clientCert: t.client.Cert, clientKey: t.client.Key, token: token}
}

// exports are the lines a second terminal pastes to use the CLI on the
// demo as dev does.
func exports(addr string, a clientAuth) []string {
	lines := []string{exportLine(envName(flagAddr), addr)}
	if a.caCert != "" {
		lines = append(lines,
			exportLine(envName(flagCACert), a.caCert),
			exportLine(envName(flagClientCert), a.clientCert),
			exportLine(envName(flagClientKey), a.clientKey))
	}
	if a.token != "" {
		lines = append(lines, exportLine(envName(flagToken), a.token))
	}
	return lines
}

func exportLine(name, value string) string {
	return fmt.Sprintf("export %s=%s", name, shellQuote(value))
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
