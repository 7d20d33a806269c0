package cluster

import (
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// proposal stands in for Raft's future of a proposed entry: the entry the
// leader stores by pointer, and beside it the FSM's response.
type proposal struct {
	log      raft.Log
	response *[1 << 16]byte
}

// TestLogCacheKeepsNoProposalAlive: an entry stored through the log cache
// keeps neither the value it was stored from nor what that value sits in
// alive, and the cache still serves the entry.
func TestLogCacheKeepsNoProposalAlive(t *testing.T) {
	for _, single := range []bool{false, true} {
		store, err := openStore(t.TempDir(), true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		c, err := newLogCache(8, store)
		if err != nil {
			t.Fatal(err)
		}
		p := &proposal{log: raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("entry")}, response: new([1 << 16]byte)}
		freed := make(chan struct{})
		runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, freed)
		method := "StoreLogs"
		if single {
			method, err = "StoreLog", c.StoreLog(&p.log)
		} else {
			err = c.StoreLogs([]*raft.Log{&p.log})
		}
		if err != nil {
			t.Fatal(err)
		}
		p = nil
		if !collected(freed, 5*time.Second) {
			t.Fatalf("%s: the cache still holds the proposal it stored an entry from", method)
		}
		var got raft.Log
		if err := c.GetLog(1, &got); err != nil || got.Index != 1 || string(got.Data) != "entry" {
			t.Fatalf("GetLog(1) = index %d data %q, %v; want the stored entry", got.Index, got.Data, err)
		}
	}
}

// collected runs the collector until done is closed, or d has passed.
func collected(done <-chan struct{}, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		runtime.GC()
		select {
		case <-done:
			return true
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}
