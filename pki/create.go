package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// Pair is one certificate and its private key, PEM encoded.
type Pair struct{ CertPEM, KeyPEM []byte }

// CA signs node and client certificates.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// clockSkew backdates every certificate a little, so that a host whose
// clock is slightly behind the issuer's accepts it at once.
const clockSkew = time.Minute

// maxNameLen bounds node IDs and client names, as cluster bounds node IDs.
const maxNameLen = 64

// NewCA creates a self-signed CA valid for validFor. Its common name carries
// a random suffix so that two clusters' CAs are told apart in logs and
// errors.
func NewCA(validFor time.Duration) (Pair, error) {
	if validFor <= 0 {
		return Pair{}, fmt.Errorf("%w: validity %s must be positive", ErrInvalid, validFor)
	}
	key, err := newKey()
	if err != nil {
		return Pair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return Pair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "raftcron CA " + hex.EncodeToString(serial.Bytes()[:4])},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaves only: an intermediate it signed by mistake
		// could issue node certificates.
		MaxPathLenZero: true,
	}
	return sign(tmpl, tmpl, key, key)
}

// ParseCA reads a CA made by NewCA (or any CA certificate and its key).
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: CA certificate %q is not a CA (basic constraints)", ErrInvalid, cert.Subject.CommonName)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%w: CA key does not belong to CA certificate %q", ErrInvalid, cert.Subject.CommonName)
	}
	return &CA{cert: cert, key: key}, nil
}

// NodeCert issues the certificate of node id, valid as server and as
// client (nodes dial each other with it). It names NodeSAN, every host of
// hosts (DNS names or IPs; a ":port" is dropped), localhost and 127.0.0.1,
// so that clients may dial the node by any of them.
func (ca *CA) NodeCert(id string, hosts []string, validFor time.Duration) (Pair, error) {
	if err := checkName("node ID", id); err != nil {
		return Pair{}, err
	}
	dns, ips, err := sans(hosts)
	if err != nil {
		return Pair{}, err
	}
	tmpl, key, err := ca.leaf(id, validFor)
	if err != nil {
		return Pair{}, err
	}
	tmpl.DNSNames = append([]string{NodeSAN}, dns...)
	tmpl.IPAddresses = ips
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	return sign(tmpl, ca.cert, key, ca.key)
}

// ClientCert issues a client certificate whose common name is name (the
// principal a node records). It carries no SAN at all, so it can never pass
// for a node.
func (ca *CA) ClientCert(name string, validFor time.Duration) (Pair, error) {
	if err := checkName("client name", name); err != nil {
		return Pair{}, err
	}
	tmpl, key, err := ca.leaf(name, validFor)
	if err != nil {
		return Pair{}, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return sign(tmpl, ca.cert, key, ca.key)
}

// leaf is the template and key of a certificate this CA signs.
func (ca *CA) leaf(cn string, validFor time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if validFor <= 0 {
		return nil, nil, fmt.Errorf("%w: validity %s must be positive", ErrInvalid, validFor)
	}
	now := time.Now()
	notAfter := now.Add(validFor)
	if notAfter.After(ca.cert.NotAfter) {
		// A chain is checked link by link: the certificate would stop
		// working when the CA expires, earlier than it says.
		return nil, nil, fmt.Errorf("%w: valid until %s, the CA until %s: ask for fewer days or create a new CA",
			ErrOutlivesCA, notAfter.UTC().Format(time.DateOnly), ca.cert.NotAfter.UTC().Format(time.DateOnly))
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}, key, nil
}

func checkName(what, s string) error {
	if s == "" || len(s) > maxNameLen {
		return fmt.Errorf("%w: %s %q must have 1 to %d characters", ErrInvalid, what, s, maxNameLen)
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return fmt.Errorf("%w: %s %q may contain only letters, digits, '-', '_' and '.'", ErrInvalid, what, s)
		}
	}
	return nil
}

// sans splits hosts into DNS names and IPs, adding the loopback names every
// node certificate carries, without duplicates.
func sans(hosts []string) (dns []string, ips []net.IP, err error) {
	seen := make(map[string]bool)
	for _, h := range slices.Concat(hosts, []string{"localhost", "127.0.0.1"}) {
		h = strings.TrimSpace(h)
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		switch {
		case h == "":
			return nil, nil, fmt.Errorf("%w: empty host", ErrInvalid)
		case h == NodeSAN:
			continue // always there
		case seen[h]:
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if strings.ContainsAny(h, " /*:@") {
			return nil, nil, fmt.Errorf("%w: host %q is neither an IP address nor a DNS name", ErrInvalid, h)
		}
		dns = append(dns, h)
	}
	return dns, ips, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

// newSerial is a random 128-bit serial number, as RFC 5280 asks for (at
// most 20 octets, positive, unpredictable).
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (Pair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return Pair{}, fmt.Errorf("sign certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, fmt.Errorf("encode key: %w", err)
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: no PEM CERTIFICATE block", ErrInvalid)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return cert, nil
}

func parseKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrInvalid)
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: PEM block %q is not a private key", ErrInvalid, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: key of type %T cannot sign", ErrInvalid, key)
	}
	return signer, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}
