package dispatch

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// AddrPolicy decides which addresses webhooks may dial (policy.Egress does). Allow
// returns why addr may not be dialled, or nil. The port counts: the node's own ports
// are refused where other ports of the same host may be allowed.
type AddrPolicy interface {
	Allow(addr netip.AddrPort) error
}

// egressError is a dial the AddrPolicy refused. It travels up through net.OpError and
// url.Error, so that Execute can tell it from a connection the target refused.
type egressError struct{ err error }

func (e *egressError) Error() string { return e.err.Error() }
func (e *egressError) Unwrap() error { return e.err }

// egressControl checks each address the dialer is about to connect to, after DNS
// resolution and before connect(2): a host name cannot smuggle a denied address past
// the check, and a refused address never receives a packet. Every address of a name is
// checked as it is tried, so one allowed address is enough to reach the host.
func egressControl(p AddrPolicy) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &egressError{fmt.Errorf("egress denied: cannot judge the address %q", address)}
		}
		if err := p.Allow(ap); err != nil {
			return &egressError{err}
		}
		return nil
	}
}

// newDialer is http.DefaultTransport's dialer, with the egress check and resolver of
// the node's policy.
func newDialer(p AddrPolicy, r *net.Resolver) *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: r}
	if p != nil {
		d.Control = egressControl(p)
	}
	return d
}

// asEgressDenied reports whether err is a dial the AddrPolicy refused.
func asEgressDenied(err error) (*egressError, bool) {
	var e *egressError
	ok := errors.As(err, &e)
	return e, ok
}

// NewTransport is the webhooks' HTTP transport under the egress policy p
// (nil: none), for other requests a node sends on behalf of its jobs
// (alert notifications): they leave the node by the same rules.
func NewTransport(p AddrPolicy, r *net.Resolver) *http.Transport { return newTransport(p, r) }

// NewDialer is the webhooks' dialer under p, for other protocols (SMTP).
func NewDialer(p AddrPolicy, r *net.Resolver) *net.Dialer { return newDialer(p, r) }

// EgressDenied reports whether err is a dial the policy refused.
func EgressDenied(err error) bool {
	_, ok := asEgressDenied(err)
	return ok
}
