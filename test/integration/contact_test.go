package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// contactMargin is what a status may lag behind the election timeout here:
// the failing heartbeats' backoff (up to half a heartbeat timeout) and a
// loaded machine's scheduling.
const contactMargin = 3 * time.Second

// The leader reports a voter that went down as unreachable once it has not
// heard from it for the election timeout, and as reachable again once it
// is back; a follower knows only itself and the leader.
func TestStatusMarksADownVoterUnreachable(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(3, 20*time.Second)
	followers := tc.followersOf(leader)
	down, other := followers[0], followers[1]
	status := pb.NewClusterServiceClient(dial(t, leader.addr))
	contacts := func() map[string]*pb.Server {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := status.GetStatus(ctx, &pb.GetStatusRequest{})
		if err != nil {
			t.Fatalf("status of %s: %v", leader.id, err)
		}
		out := map[string]*pb.Server{}
		for _, s := range resp.GetStatus().GetServers() {
			out[s.GetId()] = s
		}
		return out
	}
	for id, s := range contacts() {
		if s.GetContact() != cluster.ContactReachable {
			t.Fatalf("%s with every node up: contact %q, want reachable", id, s.GetContact())
		}
	}

	down.crash()
	stopped := time.Now()
	within := election + contactMargin
	testutil.WaitFor(t, within, fmt.Sprintf("%s reported unreachable", down.id), func() bool {
		return contacts()[down.id].GetContact() == cluster.ContactUnreachable
	})
	t.Logf("%s reported unreachable %s after it stopped", down.id, time.Since(stopped).Round(time.Millisecond))
	s := contacts()
	// Near the stop, not exactly before it: Raft counts a pipelined
	// response that failed after the stop as a contact too.
	if last := time.Unix(0, s[down.id].GetLastContactUnixNano()); last.Sub(stopped).Abs() > within {
		t.Errorf("%s last heard from at %s, want about when it stopped, %s", down.id, last, stopped)
	}
	for _, n := range []*node{leader, other} {
		if c := s[n.id].GetContact(); c != cluster.ContactReachable {
			t.Errorf("%s, up, reported %q", n.id, c)
		}
	}
	view := other.raft().Status()
	for _, sv := range view.GetServers() {
		want := ""
		if sv.GetId() == leader.id || sv.GetId() == other.id {
			want = cluster.ContactReachable
		}
		if sv.GetContact() != want {
			t.Errorf("follower %s reports %s as %q, want %q", other.id, sv.GetId(), sv.GetContact(), want)
		}
	}

	down.start(nil)
	testutil.WaitFor(t, within, fmt.Sprintf("%s reported reachable again", down.id), func() bool {
		s := contacts()[down.id]
		return s.GetContact() == cluster.ContactReachable && s.GetLastContactUnixNano() == 0
	})
}
