package cluster

import (
	"context"
	"errors"
	"net"
	"sync"
)

// ErrIsolated: the node's Isolation is cut, so the connection was refused.
var ErrIsolated = errors.New("node isolated from the network")

// Isolation cuts one node off the network at its transport, both ways, so
// that tests in one process can partition a node without touching the
// host's network. Attach it with Mux.SetIsolation before New. While cut:
//
//   - every connection the node had open when the cut began, inbound or
//     outbound, Raft or gRPC, has been closed;
//   - the mux closes every inbound connection as it arrives;
//   - the node's own dials (Raft, and requests forwarded to the leader)
//     fail at once with ErrIsolated.
//
// Heal lets new connections through again; Raft and gRPC reconnect on
// their own. Nothing else of the node changes: its Raft, its scheduler and
// its timers keep running, as on a host whose cable was pulled.
//
// A Mux without an Isolation behaves exactly as before: connections are
// not tracked and forwarding uses gRPC's default dialer.
type Isolation struct {
	// mu guards cut and conns, so that no connection is admitted after a
	// cut has closed the open ones.
	mu    sync.Mutex
	cut   bool
	conns map[*isolatedConn]struct{}
}

// NewIsolation returns an Isolation that lets everything through.
func NewIsolation() *Isolation {
	return &Isolation{conns: make(map[*isolatedConn]struct{})}
}

// Cut closes every open connection of the node and refuses new ones until
// Heal.
func (i *Isolation) Cut() {
	i.mu.Lock()
	i.cut = true
	open := make([]*isolatedConn, 0, len(i.conns))
	for c := range i.conns {
		open = append(open, c)
	}
	clear(i.conns)
	i.mu.Unlock()
	for _, c := range open {
		_ = c.Conn.Close()
	}
}

// Heal lets connections through again.
func (i *Isolation) Heal() {
	i.mu.Lock()
	i.cut = false
	i.mu.Unlock()
}

// IsCut reports whether the node is cut off.
func (i *Isolation) IsCut() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cut
}

// admit tracks c so that a later cut closes it, or closes c at once if the
// node is cut now.
func (i *Isolation) admit(c net.Conn) (net.Conn, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cut {
		_ = c.Close()
		return nil, ErrIsolated
	}
	ic := &isolatedConn{Conn: c, iso: i}
	i.conns[ic] = struct{}{}
	return ic, nil
}

func (i *Isolation) forget(c *isolatedConn) {
	i.mu.Lock()
	delete(i.conns, c)
	i.mu.Unlock()
}

// dial opens an outbound connection of the node, refused while it is cut.
func (i *Isolation) dial(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	if i.IsCut() {
		return nil, ErrIsolated
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return i.admit(c)
}

// isolatedConn leaves the Isolation's set when it is closed.
type isolatedConn struct {
	net.Conn
	iso *Isolation
}

func (c *isolatedConn) Close() error {
	c.iso.forget(c)
	return c.Conn.Close()
}

// SetIsolation attaches iso to the node on this mux (nil detaches it). Call
// it before New: the node reads it when it starts. Tests only.
func (m *Mux) SetIsolation(iso *Isolation) { m.iso.Store(iso) }

func (m *Mux) isolation() *Isolation { return m.iso.Load() }
