package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer carries Raft RPCs over the mux: inbound connections arrive
// through the mux's Raft route, outbound ones announce themselves with
// raftByte, or under TLS with the ALPN name alpnRaft and this node's
// certificate.
type streamLayer struct {
	*subListener
	advertise net.Addr
	// tls is nil in plaintext.
	tls *TLSConfig
	// iso, when set (tests only), can cut the node's dials (fault.go).
	iso *Isolation
	// served, when set, tracks the accepted connections for shutdown.
	served *served
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// Addr is what Raft tells its peers to dial, so it must be the advertised
// address, not the bound one.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Accept hands Raft's transport the next inbound connection.
func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.subListener.Accept()
	if err != nil || s.served == nil {
		return c, err
	}
	return s.served.add(c), nil
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	var conn net.Conn
	var err error
	if s.iso != nil {
		conn, err = s.iso.dial(context.Background(), &d, string(address))
	} else {
		conn, err = d.Dial("tcp", string(address))
	}
	if err != nil {
		return nil, err
	}
	if s.tls != nil {
		return s.handshake(conn, timeout)
	}
	if timeout > 0 {
		conn.SetWriteDeadline(time.Now().Add(timeout))
	}
	if _, err := conn.Write([]byte{raftByte}); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// handshake turns a dialled connection into Raft inside TLS. The peer must
// prove node identity (peerConfig) and agree to speak Raft.
func (s *streamLayer) handshake(conn net.Conn, timeout time.Duration) (net.Conn, error) {
	tc := tls.Client(conn, s.tls.peerConfig(alpnRaft))
	if timeout > 0 {
		tc.SetDeadline(time.Now().Add(timeout))
	}
	if err := tc.Handshake(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("raft TLS handshake with %s: %w", conn.RemoteAddr(), err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != alpnRaft {
		tc.Close()
		return nil, fmt.Errorf("raft TLS handshake with %s: peer negotiated %q, not %q", conn.RemoteAddr(), p, alpnRaft)
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}

// advertiseAddr is a net.Addr for a host:port that may be a name.
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }
