// Package pki issues and loads the certificates of a raftcron cluster: a CA,
// node certificates that prove a process is a member (the DNS SAN NodeSAN),
// and client certificates that prove only a name. It uses the standard
// library alone, so that a newcomer needs no openssl recipe, and it is the
// one place that says what a node certificate is: cluster enforces it.
package pki

import (
	"crypto/x509"
	"errors"
	"slices"
)

// NodeSAN is the DNS name every node certificate carries and no client
// certificate may: Raft and node-to-node forwarding accept a peer only if
// its certificate chains to the cluster's CA and names it. Nodes also dial
// each other with it as the expected server name, whatever address they
// dial.
const NodeSAN = "server.raftcron"

// One sentinel per condition; callers test with errors.Is.
var (
	// ErrExists: a file to be written is already there; nothing was
	// overwritten (a CA key lost to an accidental rerun cannot be undone).
	ErrExists = errors.New("file already exists")
	// ErrInvalid: a request or a file breaks a rule; the message names it.
	ErrInvalid = errors.New("invalid certificate request")
	// ErrOutlivesCA: the certificate asked for would expire after its CA,
	// and so stop working earlier than it says.
	ErrOutlivesCA = errors.New("certificate would outlive its CA")
)

// IsNode reports whether cert claims node identity. It says nothing about
// who signed it: call it only on a certificate whose chain was verified.
func IsNode(cert *x509.Certificate) bool {
	return cert != nil && slices.Contains(cert.DNSNames, NodeSAN)
}
