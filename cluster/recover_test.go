package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// stopAll stops every node and returns the bootstrap peers.
func (tc *testCluster) stopAll() []Peer {
	var peers []Peer
	for _, tn := range tc.nodes {
		peers = append(peers, Peer{ID: tn.id, Addr: tn.addr})
		tn.stop()
	}
	return peers
}

// Two of three data dirs are lost for good: the survivor, recovered to a
// one-node membership, leads alone with every write, and fresh nodes with
// new IDs join it.
func TestRecoverSurvivorCarriesOnAlone(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	for i := range 5 {
		put(t, leader.node, fmt.Sprintf("job-%d", i), "@hourly")
	}
	// The survivor has a snapshot and log entries after it.
	if err := leader.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	put(t, leader.node, "after-snapshot", "@daily")
	testutil.WaitFor(t, 5*time.Second, "every node has all six", func() bool {
		for _, tn := range tc.nodes {
			if tn.fsm.len() != 6 {
				return false
			}
		}
		return true
	})
	tc.stopAll()
	survivor := tc.nodes[1]

	before, err := ReadDataDir(survivor.dir, testLogger())
	if err != nil {
		t.Fatalf("ReadDataDir: %v", err)
	}
	if len(before.Servers) != 3 || before.Index == 0 {
		t.Fatalf("before recovery: %+v, want 3 servers", before)
	}
	fsm := newKVFSM()
	after, err := Recover(survivor.dir, []Peer{{ID: survivor.id, Addr: survivor.addr}}, fsm, testLogger())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(after.Servers) != 1 || after.Servers[0].ID != survivor.id || after.Index != before.Index || after.Term != before.Term {
		t.Fatalf("after recovery: %+v, want %s alone at index %d term %d", after, survivor.id, before.Index, before.Term)
	}
	if fsm.len() != 6 {
		t.Fatalf("the recovered FSM holds %d jobs, want 6", fsm.len())
	}

	alone := &testCluster{tb: t}
	alone.nodes = append(alone.nodes, startNode(t, survivor.id, survivor.dir, listen(t, survivor.addr)))
	lead := alone.waitLeader(10 * time.Second)
	readBarrier(t, lead.node)
	if lead.fsm.len() != 6 || lead.fsm.mustGet("after-snapshot") != "@daily" {
		t.Fatalf("the survivor leads with %d jobs, want all 6", lead.fsm.len())
	}
	put(t, lead.node, "after-recovery", "@weekly")
	for _, id := range []string{"n4", "n5"} {
		mux := listen(t, "127.0.0.1:0")
		tn := startNode(t, id, t.TempDir(), mux, func(c *Config) { c.Join = []string{survivor.addr} })
		alone.nodes = append(alone.nodes, tn)
		testutil.WaitFor(t, 15*time.Second, id+" has every job", func() bool { return tn.fsm.len() == 7 })
	}
	if got := len(lead.node.Status().GetServers()); got != 3 {
		t.Fatalf("%d servers after the joins, want 3", got)
	}
}

func TestRecoverRefusesAndChangesNothing(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "a", "@hourly")
	running := tc.nodes[0]
	one := []Peer{{ID: running.id, Addr: running.addr}}

	if _, err := Recover(running.dir, one, newKVFSM(), testLogger()); !errors.Is(err, ErrDataDirLocked) {
		t.Errorf("Recover on a running node's dir: %v, want ErrDataDirLocked", err)
	}
	if _, err := ReadDataDir(running.dir, testLogger()); !errors.Is(err, ErrDataDirLocked) {
		t.Errorf("ReadDataDir on a running node's dir: %v, want ErrDataDirLocked", err)
	}
	empty := t.TempDir()
	if _, err := Recover(empty, one, newKVFSM(), testLogger()); !errors.Is(err, ErrNoState) {
		t.Errorf("Recover on an empty dir: %v, want ErrNoState", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("Recover left %d files in an empty dir", len(entries))
	}
	tc.stopAll()
	for name, peers := range map[string][]Peer{
		"no peers":       nil,
		"bad id":         {{ID: "n 1", Addr: running.addr}},
		"bad address":    {{ID: "n1", Addr: "nowhere"}},
		"duplicate id":   {{ID: "n1", Addr: "127.0.0.1:1"}, {ID: "n1", Addr: "127.0.0.1:2"}},
		"duplicate addr": {{ID: "n1", Addr: "127.0.0.1:1"}, {ID: "n2", Addr: "127.0.0.1:1"}},
	} {
		if _, err := Recover(running.dir, peers, newKVFSM(), testLogger()); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	st, err := ReadDataDir(running.dir, testLogger())
	if err != nil || len(st.Servers) != 3 {
		t.Fatalf("after refused recoveries: %+v, %v; want the 3 servers untouched", st, err)
	}
	if _, err := os.Stat(filepath.Join(running.dir, "raft.db")); err != nil {
		t.Fatal(err)
	}
}
