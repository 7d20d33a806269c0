package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A peer is failing from its first failed heartbeat, with the last contact
// Raft reports, until its heartbeats resume, it is added or removed again,
// or the term ends.
func TestContactsFollowHeartbeatObservations(t *testing.T) {
	c := newContacts()
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	failing := func(id raft.ServerID) bool {
		_, ok := c.lastContact(id)
		return ok
	}
	c.note(raft.FailedHeartbeatObservation{PeerID: "n2", LastContact: at})
	c.note(raft.FailedHeartbeatObservation{PeerID: "n3", LastContact: at})
	if got, ok := c.lastContact("n2"); !ok || !got.Equal(at) {
		t.Fatalf("n2 after a failed heartbeat: %v, %v; want failing since %v", got, ok, at)
	}
	c.note(raft.ResumedHeartbeatObservation{PeerID: "n2"})
	c.note(raft.PeerObservation{Removed: true, Peer: raft.Server{ID: "n3"}})
	if failing("n2") || failing("n3") {
		t.Fatal("a peer whose heartbeats resumed, or that was removed, still counts as failing")
	}
	c.note(raft.FailedHeartbeatObservation{PeerID: "n2", LastContact: at})
	c.reset()
	if failing("n2") {
		t.Fatal("a failing peer survived the end of the term")
	}
}
