package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"

	"github.com/raftcron/raftcron/pki"
)

// ALPN names on the one port under TLS: the mux routes on what the
// handshake negotiated. gRPC clients (the CLI, grpcurl, peers forwarding)
// offer h2; only our stream layer offers alpnRaft.
const (
	alpnRaft = "raftcron-raft"
	alpnGRPC = "h2"
)

// TLSSource is the node's current certificate and CA (pki.Bundle is one).
// It is asked on every handshake, so a reload applies to the next
// connection without touching the listener.
type TLSSource interface {
	Certificate() *tls.Certificate
	Roots() *x509.CertPool
}

// TLSConfig turns TLS on for a node's one port (ListenTLS).
type TLSConfig struct {
	Source TLSSource
	// VerifyClients requires every connection to present a certificate from
	// the CA (--tls-verify-clients). Without it API clients may connect
	// without one. Raft and InternalService always require a node
	// certificate.
	VerifyClients bool
	// Logger receives refused connections at debug level; nil discards.
	Logger *slog.Logger
}

// validate: a TLS port needs the source of its certificate and CA.
func (t TLSConfig) validate() error {
	if t.Source == nil {
		return invalidField("", "cluster: TLSConfig.Source must not be nil")
	}
	return nil
}

// serverConfig is the listener's configuration; each handshake gets a fresh
// one built from the current source.
func (t *TLSConfig) serverConfig() *tls.Config {
	clientAuth := tls.VerifyClientCertIfGiven
	if t.VerifyClients {
		clientAuth = tls.RequireAndVerifyClientCert
	}
	perConn := func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return t.Source.Certificate(), nil
			},
			ClientCAs:  t.Source.Roots(),
			ClientAuth: clientAuth,
			NextProtos: []string{alpnGRPC, alpnRaft},
			// A resumed session would skip verifying the client against
			// the CA loaded since; connections are long-lived, so full
			// handshakes cost little.
			SessionTicketsDisabled: true,
		}, nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: perConn}
}

// peerConfig is how this node dials another for proto: with its own
// certificate, trusting only the CA, and expecting the peer to prove node
// identity (pki.NodeSAN) whatever address it was dialled at.
func (t *TLSConfig) peerConfig(proto string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: pki.NodeSAN,
		RootCAs:    t.Source.Roots(),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return t.Source.Certificate(), nil
		},
		NextProtos: []string{proto},
	}
}

// isNodePeer reports whether a connection's peer proved node identity: a
// certificate verified against the CA that names pki.NodeSAN.
func isNodePeer(cs tls.ConnectionState) bool {
	return len(cs.VerifiedChains) > 0 && pki.IsNode(cs.VerifiedChains[0][0])
}

// peerName names a connection's peer certificate in logs and errors.
func peerName(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return "no client certificate"
	}
	return "certificate CN=" + cs.PeerCertificates[0].Subject.CommonName
}
