package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

var errNotTLS = errors.New("connection did not come through the TLS mux")

// GRPCServerOptions are the options the gRPC server on GRPCListener needs:
// under TLS the mux has already done the handshake, and these credentials
// hand its result (the verified peer certificate) to gRPC, where
// InternalService and the API's interceptors read it. Without TLS there
// are none.
func (m *Mux) GRPCServerOptions() []grpc.ServerOption {
	if m.tls == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(muxedCreds{})}
}

// muxedCreds are server credentials for connections the mux terminated.
type muxedCreds struct{}

func (muxedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if _, ok := conn.(localConn); ok {
		return conn, localAuthInfo(), nil
	}
	tc, ok := conn.(*tls.Conn)
	if !ok {
		_ = conn.Close()
		return nil, nil, errNotTLS
	}
	return conn, tlsInfo(tc.ConnectionState()), nil
}

func (muxedCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("muxed credentials are for the server side only")
}

func (muxedCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (c muxedCreds) Clone() credentials.TransportCredentials { return c }

func (muxedCreds) OverrideServerName(string) error { return nil }

func tlsInfo(cs tls.ConnectionState) credentials.TLSInfo {
	return credentials.TLSInfo{
		State:          cs,
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
	}
}

// peerCreds dial other nodes for forwarding. Each handshake takes the
// source's current certificate and CA, so a cached connection that
// reconnects after a reload uses the new ones.
type peerCreds struct{ t *TLSConfig }

func (c peerCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return credentials.NewTLS(c.t.peerConfig(alpnGRPC)).ClientHandshake(ctx, authority, conn)
}

func (peerCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("peer credentials are for the client side only")
}

func (peerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (c peerCreds) Clone() credentials.TransportCredentials { return c }

func (peerCreds) OverrideServerName(string) error { return nil }
