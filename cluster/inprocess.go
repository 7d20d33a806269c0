package cluster

import (
	"net"

	"google.golang.org/grpc/credentials"
)

// LocalListener wraps ln, a listener that no other process can reach (an
// in-memory pipe such as the JSON API's connection to its own node), so
// that the gRPC server serves it under TLS too: the mux's credentials admit
// its connections without a handshake. Such a connection presents no
// certificate, so a call over it acts for the principal its token names,
// or for nobody, and never passes for a node (InternalService refuses it).
// Never wrap a listener that the network reaches.
func LocalListener(ln net.Listener) net.Listener { return localListener{ln} }

type localListener struct{ net.Listener }

func (l localListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return localConn{c}, nil
}

// localConn marks a connection accepted by a LocalListener.
type localConn struct{ net.Conn }

// localInfo is the AuthInfo of a localConn: no certificate, and no
// transport security beyond the process's own memory.
type localInfo struct{ credentials.CommonAuthInfo }

func (localInfo) AuthType() string { return "local" }

func localAuthInfo() credentials.AuthInfo {
	return localInfo{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}
}
