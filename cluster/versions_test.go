package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// v2Puts stands in for a kind a newer release introduced: a put of a name
// starting with "v2-" needs command version 2.
func v2Puts(c *pb.Command) uint32 {
	if strings.HasPrefix(c.GetPutJob().GetSpec().GetName(), "v2-") {
		return 2
	}
	return 1
}

// withVersions gives each node the command version of its ID (1 when not
// listed) and the v2Puts view of commands.
func withVersions(versions map[string]uint32) nodeOpts {
	return func(c *Config) {
		c.VersionOf = v2Puts
		c.CommandVersion = versions[c.ID]
	}
}

func peersOf(tc *testCluster) []Peer {
	var peers []Peer
	for _, tn := range tc.nodes {
		peers = append(peers, Peer{ID: tn.id, Addr: tn.addr})
	}
	return peers
}

// applyRetrying is Apply that rides out a transient lack of leader.
func applyRetrying(t *testing.T, n *Node, cmd *pb.Command) (*pb.CommandResult, error) {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	for {
		res, err := n.Apply(ctx, cmd)
		if errors.Is(err, ErrNoLeader) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return res, err
	}
}

// The leader refuses a command of a version one voter does not apply,
// whichever node received it, and names that voter; once the voter runs a
// build that applies it, the same command commits.
func TestLeaderRefusesCommandUntilEveryVoterAppliesIt(t *testing.T) {
	tc := newCluster(t, 3, withVersions(map[string]uint32{"n1": 2, "n2": 2}))
	tc.waitLeader(10 * time.Second)

	for _, tn := range tc.nodes {
		_, err := applyRetrying(t, tn.node, putCmd("v2-token", "@daily"))
		if !errors.Is(err, ErrUnsupportedCommand) {
			t.Fatalf("v2 command through %s: %v, want ErrUnsupportedCommand", tn.id, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "command put_job needs command version 2") || !strings.Contains(msg, "upgrade n3 (applies version 1)") ||
			strings.Contains(msg, "n1") || strings.Contains(msg, "n2") {
			t.Errorf("v2 command through %s: %q, want it to name put_job, version 2 and n3 only", tn.id, msg)
		}
	}
	// Commands of version 1 are not held back.
	put(t, tc.nodes[2].node, "plain", "@daily")
	for _, tn := range tc.nodes {
		readBarrier(t, tn.node)
		if _, ok := tn.fsm.get("v2-token"); ok {
			t.Fatalf("%s applied a refused command", tn.id)
		}
	}

	// Upgrade n3: the same command now commits.
	peers := peersOf(tc)
	old := tc.byID("n3")
	old.stop()
	up := startNode(t, "n3", old.dir, listen(t, old.addr), func(c *Config) { c.Peers = peers },
		withVersions(map[string]uint32{"n1": 2, "n2": 2, "n3": 2}))
	tc.nodes[2] = up
	tc.waitLeader(10 * time.Second)
	if res, err := applyRetrying(t, up.node, putCmd("v2-token", "@daily")); err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("v2 command after every voter applies it: %v, %v", res, err)
	}
	for _, tn := range tc.nodes {
		readBarrier(t, tn.node)
		if _, ok := tn.fsm.get("v2-token"); !ok {
			t.Errorf("%s lacks the v2 command after the upgrade", tn.id)
		}
	}
}

// Before the cluster version covers a kind, a voter that cannot be asked
// counts as not applying it: the command waits for the voter, and the
// refusal says it is unreachable, not that it needs an upgrade. The batch
// path is gated as well.
func TestUnreachableVoterCountsAsNotApplying(t *testing.T) {
	tc := newCluster(t, 3, withVersions(map[string]uint32{"n1": 2, "n2": 2, "n3": 2}))
	leader := tc.waitLeader(10 * time.Second)
	down := tc.followers(leader)[0]
	down.crash()
	leader = tc.waitLeader(10 * time.Second)

	_, err := applyRetrying(t, leader.node, putCmd("v2-token", "@daily"))
	want := "command put_job waits for " + down.id + " (unreachable) to report command version 2"
	if !errors.Is(err, ErrUnsupportedCommand) || err.Error() != want {
		t.Fatalf("v2 command with %s down: %v, want ErrUnsupportedCommand %q", down.id, err, want)
	}
	ctx := ctxTimeout(t, 10*time.Second)
	results, err := leader.node.ApplyBulk(ctx, []*pb.Command{putCmd("plain", "@daily"), putCmd("v2-batch", "@daily")})
	if err != nil {
		t.Fatalf("ApplyBulk: %v", err)
	}
	if results[0].Err != nil || results[0].Result.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Errorf("version 1 command of the batch: %+v, want OK", results[0])
	}
	if !errors.Is(results[1].Err, ErrUnsupportedCommand) {
		t.Errorf("v2 command of the batch: %+v, want ErrUnsupportedCommand", results[1])
	}
	if _, ok := leader.fsm.get("v2-batch"); ok {
		t.Error("the leader applied a refused batch command")
	}
}

// Once the cluster version covers a kind, no voter is asked: a command
// of it commits with a voter down, as any command a quorum can commit.
func TestCommandTheClusterVersionCoversIgnoresADownVoter(t *testing.T) {
	covered := func(c *Config) { c.ClusterVersion = func() uint32 { return 2 } }
	tc := newCluster(t, 3, withVersions(map[string]uint32{"n1": 2, "n2": 2, "n3": 2}), covered)
	leader := tc.waitLeader(10 * time.Second)
	down := tc.followers(leader)[0]
	down.crash()
	leader = tc.waitLeader(10 * time.Second)
	for _, tn := range tc.running() {
		if res, err := applyRetrying(t, tn.node, putCmd("v2-"+tn.id, "@daily")); err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Fatalf("v2 command through %s with %s down: %v, %v", tn.id, down.id, res, err)
		}
	}
	leader.node.versions.mu.Lock()
	defer leader.node.versions.mu.Unlock()
	if len(leader.node.versions.seen) != 0 {
		t.Errorf("the leader asked voters for versions the cluster version covers: %v", leader.node.versions.seen)
	}
}

func TestVersionRefusalNamesWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		behind, unknown []string
		want            string
	}{
		{nil, nil, ""},
		{[]string{"n3 (applies version 1)"}, nil, "command cancel_run needs command version 2 on every voter; upgrade n3 (applies version 1)"},
		{nil, []string{"n1 (unreachable)", "n2 (unreachable)"}, "command cancel_run waits for n1 (unreachable), n2 (unreachable) to report command version 2"},
		{[]string{"n3 (applies version 1)"}, []string{"n1 (unreachable)"},
			"command cancel_run needs command version 2 on every voter; upgrade n3 (applies version 1); it also waits for n1 (unreachable) to report command version 2"},
	} {
		err := versionRefusal("cancel_run", 2, tc.behind, tc.unknown)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrUnsupportedCommand) {
				t.Errorf("%q is not ErrUnsupportedCommand", got)
			}
		}
		if got != tc.want {
			t.Errorf("refusal %q, want %q", got, tc.want)
		}
	}
}

// nodeInfoStub answers NodeInfo as another node would.
type nodeInfoStub struct {
	pb.UnimplementedInternalServiceServer
	id string
}

func (s nodeInfoStub) NodeInfo(context.Context, *pb.NodeInfoRequest) (*pb.NodeInfoResponse, error) {
	return &pb.NodeInfoResponse{Id: s.id, CommandVersion: 7}, nil
}

func serveInternal(t *testing.T, impl pb.InternalServiceServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := grpc.NewServer()
	pb.RegisterInternalServiceServer(srv, impl)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// A release from before versions has no NodeInfo: it applies version 1
// exactly. An address now held by another node says nothing of the voter.
func TestVoterVersionOfOlderReleaseAndOfStrangers(t *testing.T) {
	n := &Node{cfg: Config{ID: "n1", CommandVersion: 2}, log: testLogger(), peers: newPeerConns(nil, nil)}
	t.Cleanup(n.peers.close)
	ctx := ctxTimeout(t, 5*time.Second)

	old := raft.Server{ID: "n2", Address: raft.ServerAddress(serveInternal(t, pb.UnimplementedInternalServiceServer{}))}
	if got := n.voterVersion(ctx, old, 2); got != 1 {
		t.Errorf("voter without NodeInfo: version %d, want 1", got)
	}
	stranger := raft.Server{ID: "n3", Address: raft.ServerAddress(serveInternal(t, nodeInfoStub{id: "n9"}))}
	if got := n.voterVersion(ctx, stranger, 2); got != 0 {
		t.Errorf("address answered by n9 for voter n3: version %d, want 0", got)
	}
	same := raft.Server{ID: "n9", Address: stranger.Address}
	if got := n.voterVersion(ctx, same, 2); got != 7 {
		t.Errorf("n9 at its own address: version %d, want 7", got)
	}
	if got := n.voterVersion(ctx, raft.Server{ID: "n1"}, 2); got != 2 {
		t.Errorf("the leader itself: version %d, want its own 2", got)
	}
}

// A release from before versions leads and checks nothing: a newer
// follower must not forward it a command that some voter (the leader
// itself, at least) does not apply, or the old leader would commit it and
// the nodes would diverge.
func TestFollowerRefusesToForwardWhatAnOldLeaderWouldCommit(t *testing.T) {
	oldLeader := func(c *Config) {
		if c.ID == "n1" {
			c.CommandVersion, c.VersionOf = 0, nil // a release that knows no versions
			return
		}
		c.CommandVersion, c.VersionOf = 2, v2Puts
	}
	tc := newCluster(t, 3, oldLeader)
	if leader := tc.waitLeader(10 * time.Second); leader.id != "n1" {
		if _, err := leader.node.TransferLeadership(ctxTimeout(t, 10*time.Second), "n1"); err != nil {
			t.Fatalf("transfer leadership to n1: %v", err)
		}
	}
	testutil.WaitFor(t, 10*time.Second, "n1 leading", func() bool { return tc.waitLeader(10*time.Second).id == "n1" })

	_, err := applyRetrying(t, tc.byID("n2").node, putCmd("v2-token", "@daily"))
	if !errors.Is(err, ErrUnsupportedCommand) || !strings.Contains(err.Error(), "upgrade n1 (applies version 1)") {
		t.Fatalf("v2 command through a new follower of an old leader: %v, want ErrUnsupportedCommand naming n1", err)
	}
	put(t, tc.byID("n2").node, "plain", "@daily")
	for _, tn := range tc.nodes {
		readBarrier(t, tn.node)
		if _, ok := tn.fsm.get("v2-token"); ok {
			t.Errorf("%s applied the command the old leader should never have been given", tn.id)
		}
	}
}
