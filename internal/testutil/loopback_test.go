package testutil

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"testing"
)

// A node stopped and started again binds the port it had. On 127.0.0.1 the
// kernel may meanwhile have given that port number to an outgoing
// connection (their local ports come from the same range as a listener's
// port 0, on 127.0.0.1), and the restart fails; on LoopbackHost it cannot.
func TestLoopbackHostPortSurvivesAConnectionOnItsNumber(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux routes all of 127.0.0.0/8 to the loopback interface")
	}
	if err := rebindAfterReuse(t, "127.0.0.1"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("control: rebinding 127.0.0.1 after a connection took its port: %v, want EADDRINUSE", err)
	}
	host := LoopbackHost()
	if err := rebindAfterReuse(t, host); err != nil {
		t.Fatalf("rebinding %s after a connection took its port number on 127.0.0.1: %v", host, err)
	}
}

// rebindAfterReuse binds host:0, frees the port, lets an outgoing
// connection have that port number on 127.0.0.1, as the kernel may, and
// binds host and the port again.
func rebindAfterReuse(t *testing.T, host string) error {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
	c, err := d.Dial("tcp", peer.Addr().String())
	if err != nil {
		t.Fatalf("a connection from 127.0.0.1:%d: %v", port, err)
	}
	defer c.Close()
	again, err := net.Listen("tcp", fmt.Sprintf("%s:%d", host, port))
	if err != nil {
		return err
	}
	return again.Close()
}
