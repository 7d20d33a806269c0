package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// raftByte opens every Raft connection (written by streamLayer.Dial). HTTP/2
// prefaces start with 'P' and TLS ClientHellos with 0x16, so it never clashes.
const raftByte byte = 0x01

// peekTimeout bounds how long a new connection may stay silent before its
// first byte; every client we serve speaks first.
const peekTimeout = 5 * time.Second

// Mux owns the node's one TCP port and routes each connection by its first
// byte: Raft (consumed) or gRPC (put back).
type Mux struct {
	ln   net.Listener
	raft *subListener
	grpc *subListener
	done chan struct{}
	loop sync.WaitGroup // the accept loop

	// peeking holds connections whose first byte is awaited, so Close can
	// interrupt their reads.
	peekMu  sync.Mutex
	peeking map[net.Conn]struct{}

	closeOnce sync.Once
	closeErr  error

	// iso, when set (tests only), can cut the node off (fault.go).
	iso atomic.Pointer[Isolation]
}

// Listen binds addr and starts routing connections. A failure is a
// *ConfigError naming the Addr field; a taken port matches ErrAddrInUse.
func Listen(addr string) (*Mux, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, ListenError(FieldAddr, addr, err)
	}
	return NewMux(ln), nil
}

// ListenError reports a failed bind of a node's port, the address addr of
// Config field field, as a *ConfigError in words that name the problem: a
// taken port matches ErrAddrInUse. The server binds its HTTP port through
// it too, so that every bind failure reads alike.
func ListenError(field, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return &ConfigError{Field: field, Rule: addr + ": " + ErrAddrInUse.Error(), Err: ErrAddrInUse}
	}
	return &ConfigError{Field: field, Rule: fmt.Sprintf("%s: %v", addr, err), Err: err}
}

// NewMux routes the connections of a listener the caller bound; the mux
// owns it from now on.
func NewMux(ln net.Listener) *Mux {
	m := &Mux{
		ln:      ln,
		raft:    newSubListener(ln.Addr()),
		grpc:    newSubListener(ln.Addr()),
		done:    make(chan struct{}),
		peeking: make(map[net.Conn]struct{}),
	}
	m.loop.Add(1)
	go m.acceptLoop()
	return m
}

// Addr is the bound address (useful when listening on port 0).
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// GRPCListener yields every connection that does not start with the Raft byte.
func (m *Mux) GRPCListener() net.Listener { return m.grpc }

// Close stops accepting, closes both routed listeners and drops connections
// still waiting for their first byte. Established connections are left to
// their servers.
func (m *Mux) Close() error {
	m.closeOnce.Do(func() {
		close(m.done)
		m.closeErr = m.ln.Close()
		m.raft.Close()
		m.grpc.Close()
		m.peekMu.Lock()
		for c := range m.peeking {
			c.Close()
		}
		m.peekMu.Unlock()
		m.loop.Wait()
	})
	return m.closeErr
}

func (m *Mux) acceptLoop() {
	defer m.loop.Done()
	var delay time.Duration
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			// Transient failures (EMFILE, ...): back off instead of spinning.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-m.done:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if !m.track(conn) {
			conn.Close()
			return
		}
		go m.route(conn)
	}
}

func (m *Mux) track(c net.Conn) bool {
	m.peekMu.Lock()
	defer m.peekMu.Unlock()
	select {
	case <-m.done:
		return false
	default:
	}
	m.peeking[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.peekMu.Lock()
	delete(m.peeking, c)
	m.peekMu.Unlock()
}

// route reads one byte in its own goroutine so a silent client never stalls
// the accept loop.
func (m *Mux) route(conn net.Conn) {
	var b [1]byte
	conn.SetReadDeadline(time.Now().Add(peekTimeout))
	_, err := conn.Read(b[:])
	m.untrack(conn)
	if err != nil {
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	if iso := m.isolation(); iso != nil {
		if conn, err = iso.admit(conn); err != nil {
			return
		}
	}
	if b[0] == raftByte {
		m.raft.push(conn)
		return
	}
	pc := &peekedConn{Conn: conn, first: b[0]}
	pc.pending.Store(true)
	m.grpc.push(pc)
}

// peekedConn returns the byte the mux read before anything else.
type peekedConn struct {
	net.Conn
	first   byte
	pending atomic.Bool
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(p) > 0 && c.pending.CompareAndSwap(true, false) {
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}

// subListener is a net.Listener fed by the mux.
type subListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newSubListener(addr net.Addr) *subListener {
	return &subListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops this route only; the mux keeps serving the other one.
func (l *subListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *subListener) Addr() net.Addr { return l.addr }

// push hands conn to Accept, or closes it once nobody will accept it.
func (l *subListener) push(conn net.Conn) {
	select {
	case l.conns <- conn:
	case <-l.done:
		conn.Close()
	}
}
