package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// raftByte opens every plaintext Raft connection (written by
// streamLayer.Dial). HTTP/2 prefaces start with 'P' and TLS ClientHellos
// with 0x16, so it never clashes.
const raftByte byte = 0x01

// tlsRecordHandshake is the first byte of every TLS ClientHello.
const tlsRecordHandshake byte = 0x16

// peekTimeout bounds how long a new connection may stay silent before its
// first byte; every client we serve speaks first.
const peekTimeout = 5 * time.Second

// handshakeTimeout bounds a TLS handshake, so a client that stalls halfway
// holds nothing for long.
const handshakeTimeout = 10 * time.Second

// Mux owns the node's one TCP port and routes each connection to Raft or
// gRPC. In plaintext it routes by the first byte: Raft (consumed) or gRPC
// (put back). Under TLS (ListenTLS) every connection must be TLS; the mux
// does the handshake and routes by the negotiated ALPN protocol, Raft only
// for peers with a node certificate.
type Mux struct {
	ln   net.Listener
	raft *subListener
	grpc *subListener
	done chan struct{}
	loop sync.WaitGroup // the accept loop
	// tls is nil in plaintext.
	tls *TLSConfig
	log *slog.Logger

	// pending holds connections not yet routed (first byte or handshake
	// awaited), so Close can interrupt them.
	pendingMu sync.Mutex
	pending   map[net.Conn]struct{}

	closeOnce sync.Once
	closeErr  error

	// iso, when set (tests only), can cut the node off (fault.go).
	iso atomic.Pointer[Isolation]
}

// Listen binds addr and starts routing plaintext connections. A failure
// is a *ConfigError naming the Addr field; a taken port matches
// ErrAddrInUse.
func Listen(addr string) (*Mux, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, ListenError(FieldAddr, addr, err)
	}
	return NewMux(ln), nil
}

// ListenTLS binds addr and starts routing connections that must all be
// TLS. A node started on this mux dials its peers with cfg too. Failures
// are those of Listen and NewMuxTLS.
func ListenTLS(addr string, cfg TLSConfig) (*Mux, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, ListenError(FieldAddr, addr, err)
	}
	return newMux(ln, &cfg), nil
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

// NewMux routes the plaintext connections of a listener the caller bound;
// the mux owns it from now on.
func NewMux(ln net.Listener) *Mux { return newMux(ln, nil) }

// NewMuxTLS is NewMux for a port where every connection must be TLS (see
// ListenTLS). A TLSConfig without a Source is a *ConfigError, and ln is
// left to the caller.
func NewMuxTLS(ln net.Listener, cfg TLSConfig) (*Mux, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newMux(ln, &cfg), nil
}

func newMux(ln net.Listener, cfg *TLSConfig) *Mux {
	log := slog.New(slog.DiscardHandler)
	if cfg != nil && cfg.Logger != nil {
		log = cfg.Logger
	}
	m := &Mux{
		ln:      ln,
		raft:    newSubListener(ln.Addr()),
		grpc:    newSubListener(ln.Addr()),
		done:    make(chan struct{}),
		tls:     cfg,
		log:     log,
		pending: make(map[net.Conn]struct{}),
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
// not yet routed. Established connections are left to
// their servers.
func (m *Mux) Close() error {
	m.closeOnce.Do(func() {
		close(m.done)
		m.closeErr = m.ln.Close()
		m.raft.Close()
		m.grpc.Close()
		m.pendingMu.Lock()
		for c := range m.pending {
			c.Close()
		}
		m.pendingMu.Unlock()
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
	m.pendingMu.Lock()
	defer m.pendingMu.Unlock()
	select {
	case <-m.done:
		return false
	default:
	}
	m.pending[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.pendingMu.Lock()
	delete(m.pending, c)
	m.pendingMu.Unlock()
}

// route reads one byte in its own goroutine so a silent client never stalls
// the accept loop, then hands the connection over.
func (m *Mux) route(conn net.Conn) {
	routed, dst := m.classify(conn)
	m.untrack(conn)
	if routed != nil {
		dst.push(routed)
	}
}

// classify returns the connection to hand over and its route, or closes it
// and returns nil.
func (m *Mux) classify(raw net.Conn) (net.Conn, *subListener) {
	var b [1]byte
	raw.SetReadDeadline(time.Now().Add(peekTimeout))
	if _, err := raw.Read(b[:]); err != nil {
		raw.Close()
		return nil, nil
	}
	raw.SetReadDeadline(time.Time{})
	conn := raw
	if iso := m.isolation(); iso != nil {
		var err error
		if conn, err = iso.admit(raw); err != nil {
			return nil, nil
		}
	}
	pc := &peekedConn{Conn: conn, first: b[0]}
	pc.pending.Store(true)
	switch {
	case m.tls != nil:
		routed, dst := m.classifyTLS(pc)
		if routed == nil {
			conn.Close()
		}
		return routed, dst
	case b[0] == raftByte:
		return conn, m.raft
	default:
		return pc, m.grpc
	}
}

// classifyTLS refuses plaintext without a word, completes the handshake and
// routes by ALPN. Raft is for node certificates only: hashicorp/raft
// authenticates nothing, so this is where node identity is enforced.
func (m *Mux) classifyTLS(pc *peekedConn) (net.Conn, *subListener) {
	remote := pc.RemoteAddr().String()
	if pc.first != tlsRecordHandshake {
		m.log.Debug("refused a plaintext connection on a TLS port", "remote", remote, "first_byte", pc.first)
		return nil, nil
	}
	tc := tls.Server(pc, m.tls.serverConfig())
	tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		m.log.Debug("refused a connection: TLS handshake failed", "remote", remote, "err", err)
		return nil, nil
	}
	tc.SetDeadline(time.Time{})
	cs := tc.ConnectionState()
	if cs.NegotiatedProtocol != alpnRaft {
		return tc, m.grpc
	}
	if !isNodePeer(cs) {
		m.log.Debug("refused Raft from a peer without a node certificate", "remote", remote, "peer", peerName(cs))
		return nil, nil
	}
	return tc, m.raft
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
