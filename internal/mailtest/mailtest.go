// Package mailtest runs an SMTP server for tests (github.com/emersion/go-smtp)
// on a loopback port: STARTTLS with a certificate of its own, AUTH PLAIN
// only over TLS, and every mail it takes kept in memory.
package mailtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is one message the server took.
type Mail struct {
	From string
	To   []string
	Data []byte
	// TLS reports whether the session had switched to TLS by DATA.
	TLS  bool
	User string
}

// Server is a running test SMTP server.
type Server struct {
	// Addr is its host:port on 127.0.0.1.
	Addr string
	// Roots trusts its certificate; CAFile is the same in PEM, for a
	// process's SSL_CERT_FILE.
	Roots  *x509.CertPool
	CAFile string

	mu    sync.Mutex
	mails []Mail
	user  string
	pass  string
}

// Start runs a server on 127.0.0.1 until the test ends; user and pass, if
// set, are the only login it takes.
func Start(t testing.TB, user, pass string) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return Serve(t, ln, user, pass)
}

// Serve is Start on a listener of the caller's (reachable where the
// senders are); its certificate names the listener's IP.
func Serve(t testing.TB, ln net.Listener, user, pass string) *Server {
	t.Helper()
	ip := net.ParseIP("127.0.0.1")
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		ip = tcp.IP
	}
	cert, pemCert := selfSigned(t, ip)
	s := &Server{user: user, pass: pass, Roots: x509.NewCertPool()}
	s.Roots.AppendCertsFromPEM(pemCert)
	s.CAFile = filepath.Join(t.TempDir(), "smtp-ca.pem")
	if err := os.WriteFile(s.CAFile, pemCert, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0) // a sender killed mid-session is the tests' business
	s.Addr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return s
}

// Mails are the mails taken so far.
func (s *Server) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtp.Conn
	mail Mail
}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if ss.s.user == "" || user != ss.s.user || pass != ss.s.pass {
			return errors.New("bad login")
		}
		ss.mail.User = user
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.user != "" && ss.mail.User == "" {
		return &smtp.SMTPError{Code: 530, Message: "log in first"}
	}
	ss.mail.From = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.mail.To = append(ss.mail.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := ss.mail
	m.Data = b
	_, m.TLS = ss.conn.TLSConnectionState()
	ss.s.mu.Lock()
	ss.s.mails = append(ss.s.mails, m)
	ss.s.mu.Unlock()
	return nil
}

func (ss *session) Reset()        { ss.mail = Mail{User: ss.mail.User} }
func (ss *session) Logout() error { return nil }

// selfSigned is a certificate for ip and localhost, and its PEM.
func selfSigned(t testing.TB, ip net.IP) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailtest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{ip}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return pair, certPEM
}
