package main

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
)

// dialer opens the client's connections and keeps the last failure, so
// that a call refused by the transport says why from the error itself, not
// from the words of gRPC's status message.
type dialer struct {
	mu   sync.Mutex // guards last
	last error
}

func (d *dialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	d.mu.Lock()
	d.last = err
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
