package cluster

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcron/raftcron/internal/testutil"
)

// accept returns the next connection from l, failing after a timeout.
func accept(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := l.Accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Accept: %v", r.err)
		}
		return r.c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection routed within 5s")
		return nil
	}
}

func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf)
}

func TestMuxRoutesByFirstByte(t *testing.T) {
	m := listen(t, "127.0.0.1:0")
	defer m.Close()
	addr := m.Addr().String()

	// Raft: our stream layer announces itself; the mux consumes the byte.
	stream := &streamLayer{subListener: m.raft, advertise: advertiseAddr("node.example:7001")}
	if got := stream.Addr().String(); got != "node.example:7001" {
		t.Errorf("stream layer Addr %q, want the advertised address", got)
	}
	out, err := stream.Dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer out.Close()
	out.Write([]byte("raft-rpc"))
	in := accept(t, stream)
	defer in.Close()
	if got := readN(t, in, 8); got != "raft-rpc" {
		t.Errorf("raft route read %q, want %q", got, "raft-rpc")
	}

	// Anything else (here an HTTP/2 preface): the first byte is put back.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	c.Write([]byte(preface))
	g := accept(t, m.GRPCListener())
	defer g.Close()
	if got := readN(t, g, 1); got != "P" {
		t.Errorf("first read on gRPC route %q, want the peeked byte", got)
	}
	if got := readN(t, g, len(preface)-1); got != preface[1:] {
		t.Errorf("gRPC route read %q, want the rest of the preface", got)
	}

	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := m.GRPCListener().Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := stream.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("raft Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("port still accepts connections after Close")
	}
}

func TestMuxCloseInterruptsSilentConnections(t *testing.T) {
	m := listen(t, "127.0.0.1:0")
	c, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	testutil.WaitFor(t, 5*time.Second, "the silent connection to be accepted", func() bool {
		m.pendingMu.Lock()
		defer m.pendingMu.Unlock()
		return len(m.pending) == 1
	})
	start := time.Now()
	m.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %s with a silent connection open", took)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("silent connection still open after Close")
	}
}

func TestListenAddrInUse(t *testing.T) {
	m := listen(t, "127.0.0.1:0")
	defer m.Close()
	addr := m.Addr().String()
	_, err := Listen(addr)
	if !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("Listen on a used port: %v, want ErrAddrInUse", err)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != FieldAddr || ce.Rule != addr+": address already in use" {
		t.Errorf("error %#v, want a ConfigError of Addr reading %q", err, addr+": address already in use")
	}
	if _, err := Listen("127.0.0.1"); !errors.As(err, &ce) || ce.Field != FieldAddr || !strings.HasPrefix(ce.Rule, "127.0.0.1: ") {
		t.Errorf("Listen without port: %v, want a ConfigError of Addr", err)
	}
}
