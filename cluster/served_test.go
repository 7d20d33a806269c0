package cluster

import (
	"net"
	"testing"
	"time"
)

// Shutdown closes the store only once no transport handler runs: a
// handler in the middle of a command (a heartbeat persisting a newer term)
// holds the drain until it returns, and one waiting for its next command
// is woken by the drain closing its connection.
func TestDrainWaitsForRaftHandlersToReturn(t *testing.T) {
	s := newServed()
	busyPeer, busyEnd := net.Pipe()
	defer busyPeer.Close()
	idlePeer, idleEnd := net.Pipe()
	defer idlePeer.Close()
	busy, idle := s.add(busyEnd), s.add(idleEnd)

	release := make(chan struct{})
	go func() { // mid-command: returns when released, as a handler does
		<-release
		_ = busy.Close()
	}()
	idleReturned := make(chan error, 1)
	go func() { // between commands: blocked reading the next one
		_, err := idle.Read(make([]byte, 1))
		_ = idle.Close()
		idleReturned <- err
	}()

	if s.drain(50 * time.Millisecond) {
		t.Fatal("drain returned while a handler was still running")
	}
	select {
	case err := <-idleReturned:
		if err == nil {
			t.Fatal("the waiting handler read a command from a drained connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not wake the handler waiting for its next command")
	}
	close(release)
	if !s.drain(5 * time.Second) {
		t.Fatal("drain timed out after every handler returned")
	}
}

// A connection accepted once the drain began is closed at once, and a
// drain with no connection returns at once.
func TestDrainClosesLateConnections(t *testing.T) {
	s := newServed()
	if !s.drain(time.Second) {
		t.Fatal("drain with nothing served timed out")
	}
	peer, end := net.Pipe()
	defer peer.Close()
	late := s.add(end)
	if _, err := late.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection accepted during shutdown was served")
	}
	_ = late.Close()
}
