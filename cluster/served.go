package cluster

import (
	"net"
	"sync"
	"time"
)

// handlerDrainTimeout bounds how long shutdown waits for Raft's transport
// handlers: they return at once when their connection closes, unless a
// disk write holds one (a stalled disk), which must not hold the shutdown.
const handlerDrainTimeout = 5 * time.Second

// served tracks the inbound connections Raft's transport serves, so that
// shutdown can wait until none of their handlers runs before it closes the
// store. hashicorp/raft answers a heartbeat on the connection's own
// goroutine, which Shutdown does not wait for: one that began just before
// Shutdown may persist a newer term after it, and on a closed store Raft
// panics ("failed to save current term: database not open",
// hashicorp/raft#717).
type served struct {
	mu      sync.Mutex
	conns   map[*servedConn]struct{}
	closing bool
	// idle is closed once closing and every handler has returned.
	idle     chan struct{}
	idleDone bool
}

func newServed() *served {
	return &served{conns: make(map[*servedConn]struct{}), idle: make(chan struct{})}
}

// add tracks an accepted connection until its handler closes it. One
// accepted while draining is closed at once.
func (s *served) add(c net.Conn) net.Conn {
	sc := &servedConn{Conn: c, s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		_ = c.Close()
		return sc
	}
	s.conns[sc] = struct{}{}
	return sc
}

func (s *served) remove(sc *servedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, sc)
	s.idleIfDoneLocked()
}

// drain closes every served connection, so a handler waiting for a command
// returns, and waits up to timeout for the handlers to close theirs, which
// each does on return. It reports whether they all did.
func (s *served) drain(timeout time.Duration) bool {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		for sc := range s.conns {
			_ = sc.Conn.Close() // not sc.Close: the handler's own close marks its return
		}
		s.idleIfDoneLocked()
	}
	s.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.idle:
		return true
	case <-t.C:
		return false
	}
}

func (s *served) idleIfDoneLocked() {
	if s.closing && len(s.conns) == 0 && !s.idleDone {
		s.idleDone = true
		close(s.idle)
	}
}

// servedConn is an inbound Raft connection; its handler's Close, on return,
// ends its tracking.
type servedConn struct {
	net.Conn
	s    *served
	once sync.Once
}

func (c *servedConn) Close() error {
	c.once.Do(func() { c.s.remove(c) })
	return c.Conn.Close()
}
