package cli

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"
)

// dialer opens the client's connections and keeps the last failure, so
// that a call refused by the transport says why from the error itself, not
// from the words of gRPC's status message.
type dialer struct {
	// timeout bounds each connection attempt; 0: the call's deadline does.
	timeout time.Duration

	mu   sync.Mutex // guards last and drop
	last error
	// drop is how the node ended the current connection before it said
	// anything, if it did: a TLS port closes a plaintext client without a
	// word, and refuses a client without the certificate it requires.
	drop error
}

func (d *dialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	nd := net.Dialer{Timeout: d.timeout}
	c, err := nd.DialContext(ctx, "tcp", addr)
	d.mu.Lock()
	d.last, d.drop = err, nil
	d.mu.Unlock()
	return c, err
}

// failure is the error of the last dial, nil if it succeeded or none was
// made.
func (d *dialer) failure() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// watch wraps creds so that the dialer sees the connection's errors above
// the handshake too, where a TLS alert from the node shows.
func (d *dialer) watch(creds credentials.TransportCredentials) credentials.TransportCredentials {
	return watchedCreds{creds, d}
}

// saw records err if it says the node closed or refused the connection.
// Which of these the client meets depends on how far its own writes got.
func (d *dialer) saw(err error) {
	var op *net.OpError
	dropped := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &op) && op.Op == "remote error" // a TLS alert
	if !dropped {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.drop == nil {
		d.drop = err
	}
}

// dropped is how the node ended the current connection before it said
// anything, nil if it did not.
func (d *dialer) dropped() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drop
}

type watchedCreds struct {
	credentials.TransportCredentials
	d *dialer
}

func (c watchedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		c.d.saw(err)
		return nil, nil, err
	}
	return &watchedConn{Conn: conn, d: c.d}, info, nil
}

func (c watchedCreds) Clone() credentials.TransportCredentials {
	return watchedCreds{c.TransportCredentials.Clone(), c.d}
}

// watchedConn reports its errors to the dialer until the node has said
// something: a node that answered and closes later (it stops, the
// connection idled) is no reason to doubt TLS or certificates.
type watchedConn struct {
	net.Conn
	d        *dialer
	answered atomic.Bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
	}
	c.seen(err)
	return n, err
}

func (c *watchedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.seen(err)
	return n, err
}

func (c *watchedConn) seen(err error) {
	if err != nil && !c.answered.Load() {
		c.d.saw(err)
	}
}

// dialCause names why a dial failed in a few words.
func dialCause(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no such host"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "i/o timeout"
	default:
		return err.Error()
	}
}
