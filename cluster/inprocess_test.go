package cluster

import (
	"errors"
	"net"
	"testing"

	"google.golang.org/grpc/credentials"
)

// The TLS mux's gRPC credentials admit a connection of a LocalListener
// without a certificate, and still refuse any other connection that did
// not come through the mux's handshake.
func TestMuxedCredsAdmitLocalConnectionsWithoutACertificate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	local := LocalListener(ln)
	defer func() { _ = local.Close() }()
	dial := func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
			return
		}
		_ = c.Close()
	}

	go dial()
	conn, err := local.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := muxedCreds{}.ServerHandshake(conn)
	if err != nil {
		t.Fatalf("a local connection: %v, want admitted", err)
	}
	if _, isTLS := info.(credentials.TLSInfo); isTLS || info.AuthType() != "local" {
		t.Fatalf("a local connection's AuthInfo %#v, want no certificate", info)
	}
	_ = conn.Close()

	go dial()
	plain, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := (muxedCreds{}).ServerHandshake(plain); !errors.Is(err, errNotTLS) {
		t.Fatalf("a plain connection: %v, want %v", err, errNotTLS)
	}
}
