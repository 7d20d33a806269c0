package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcron/raftcron/internal/testutil"
)

// newIsolatableCluster is newCluster with an Isolation on every node's mux.
func newIsolatableCluster(tb testing.TB, n int, opts ...nodeOpts) (*testCluster, []*Isolation) {
	tb.Helper()
	muxes := make([]*Mux, n)
	isos := make([]*Isolation, n)
	peers := make([]Peer, n)
	for i := range muxes {
		muxes[i] = listen(tb, "127.0.0.1:0")
		isos[i] = NewIsolation()
		muxes[i].SetIsolation(isos[i])
		peers[i] = Peer{ID: fmt.Sprintf("n%d", i+1), Addr: muxes[i].Addr().String()}
	}
	tc := &testCluster{tb: tb}
	withPeers := func(c *Config) { c.Peers = peers }
	for i, m := range muxes {
		tc.nodes = append(tc.nodes, startNode(tb, peers[i].ID, tb.TempDir(), m, append([]nodeOpts{withPeers}, opts...)...))
	}
	return tc, isos
}

// leaderAmong waits until exactly one of nodes leads and all of them name it.
func leaderAmong(tb testing.TB, nodes []*testNode, timeout time.Duration) *testNode {
	tb.Helper()
	var leader *testNode
	testutil.WaitFor(tb, timeout, "a leader the connected nodes agree on", func() bool {
		leader = nil
		for _, tn := range nodes {
			if tn.node.raft.State() == raft.Leader {
				if leader != nil {
					return false
				}
				leader = tn
			}
		}
		if leader == nil {
			return false
		}
		for _, tn := range nodes {
			if id, _ := tn.node.Leader(); id != leader.id {
				return false
			}
		}
		return true
	})
	return leader
}

func TestIsolatedLeaderIsReplacedAndRejoinsAfterHeal(t *testing.T) {
	tc, isos := newIsolatableCluster(t, 3)
	old := tc.waitLeader(10 * time.Second)
	put(t, old.node, "before", "@hourly")

	var oldIso *Isolation
	var rest []*testNode
	for i, tn := range tc.nodes {
		if tn == old {
			oldIso = isos[i]
			continue
		}
		rest = append(rest, tn)
	}
	oldIso.Cut()

	// The majority elects a new leader and commits without the old one.
	leader := leaderAmong(t, rest, 10*time.Second)
	put(t, leader.node, "during", "@daily")
	testutil.WaitFor(t, 5*time.Second, "the cut-off leader to step down", func() bool {
		return old.node.raft.State() != raft.Leader
	})
	if _, ok := old.fsm.get("during"); ok {
		t.Fatal("the isolated node applied an entry committed while it was cut off")
	}
	// Its own writes cannot commit: no leader is reachable from it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := old.node.Apply(ctx, putCmd("lost", "@hourly"))
	cancel()
	if err == nil {
		t.Fatal("Apply on the isolated node succeeded")
	}

	oldIso.Heal()
	testutil.WaitFor(t, 15*time.Second, "the healed node to catch up", func() bool {
		_, ok := old.fsm.get("during")
		return ok
	})
	leaderAmong(t, tc.nodes, 15*time.Second)
	for _, tn := range tc.nodes {
		if _, ok := tn.fsm.get("lost"); ok {
			t.Errorf("%s applied the write refused on the isolated node", tn.id)
		}
	}
}

func TestIsolationClosesOpenConnsAndRefusesNewOnes(t *testing.T) {
	m := listen(t, "127.0.0.1:0")
	defer m.Close()
	iso := NewIsolation()
	m.SetIsolation(iso)
	addr := m.Addr().String()

	open := dialGRPCRoute(t, addr)
	defer open.Close()
	served := acceptOne(t, m.GRPCListener())
	defer served.Close()
	first := make([]byte, 1)
	if _, err := served.Read(first); err != nil || first[0] != 'P' {
		t.Fatalf("first byte on the gRPC route: %q, %v; want the client's 'P'", first, err)
	}

	iso.Cut()
	if !iso.IsCut() {
		t.Fatal("IsCut() = false after Cut")
	}
	// The open connection is closed under both ends.
	if _, err := served.Read(make([]byte, 1)); err == nil {
		t.Fatal("server side of an open connection still readable after Cut")
	}
	open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := open.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("client side of an open connection after Cut: read error %v, want EOF or reset", err)
	}
	// A new inbound connection is dropped before it reaches the route.
	late := dialGRPCRoute(t, addr)
	defer late.Close()
	late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := late.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("inbound connection while cut: read error %v, want EOF or reset", err)
	}
	// Outbound dials of the node fail at once, Raft and forwarding alike.
	sl := &streamLayer{subListener: m.raft, advertise: m.Addr(), iso: iso}
	if _, err := sl.Dial(raft.ServerAddress(addr), time.Second); !errors.Is(err, ErrIsolated) {
		t.Fatalf("Raft dial while cut: %v, want ErrIsolated", err)
	}
	if _, err := iso.dial(context.Background(), &net.Dialer{}, addr); !errors.Is(err, ErrIsolated) {
		t.Fatalf("forwarding dial while cut: %v, want ErrIsolated", err)
	}

	iso.Heal()
	healed := dialGRPCRoute(t, addr)
	defer healed.Close()
	acceptOne(t, m.GRPCListener()).Close()
	c, err := sl.Dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatalf("Raft dial after Heal: %v", err)
	}
	c.Close()
}

// dialGRPCRoute opens a connection whose first byte sends it to the gRPC
// route.
func dialGRPCRoute(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	if _, err := c.Write([]byte("P")); err != nil {
		t.Fatalf("write first byte: %v", err)
	}
	return c
}

func acceptOne(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("accept: %v", r.err)
		}
		return r.c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection reached the gRPC route within 5s")
		return nil
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
