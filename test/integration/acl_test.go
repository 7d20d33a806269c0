package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// aclNode is a node as `raftcron serve --acl` wires its API: the FSM, the
// cluster node, and the public services behind the ACL interceptors on the
// port that also carries Raft and forwarding. It runs no scheduler: these
// tests only register jobs and tokens.
type aclNode struct {
	id   string
	fsm  *fsm.FSM
	raft *cluster.Node
	conn *grpc.ClientConn
}

func (n *aclNode) jobs() pb.JobServiceClient { return pb.NewJobServiceClient(n.conn) }
func (n *aclNode) acl() pb.AclServiceClient  { return pb.NewAclServiceClient(n.conn) }

func startACLCluster(t *testing.T) []*aclNode {
	t.Helper()
	const size = 3
	muxes := make([]*cluster.Mux, size)
	peers := make([]cluster.Peer, size)
	for i := range muxes {
		m, err := cluster.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		muxes[i] = m
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: m.Addr().String()}
	}
	nodes := make([]*aclNode, size)
	for i, p := range peers {
		nodes[i] = startACLNode(t, p, peers, muxes[i])
	}
	return nodes
}

func startACLNode(t *testing.T, self cluster.Peer, peers []cluster.Peer, mux *cluster.Mux) *aclNode {
	t.Helper()
	state := fsm.New()
	rn, err := cluster.New(cluster.Config{
		ID: self.ID, Addr: self.Addr, DataDir: t.TempDir(), Peers: peers,
		HeartbeatTimeout: heartbeat, ElectionTimeout: election, LeaderLeaseTimeout: lease,
		FSM: state, Logger: testLogger().With("node", self.ID),
	}, mux)
	if err != nil {
		mux.Close()
		t.Fatalf("start %s: %v", self.ID, err)
	}
	auth := api.NewAuthorizer(api.AuthConfig{Enabled: true, Tokens: state, Barrier: rn})
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(auth.Unary()), grpc.ChainStreamInterceptor(auth.Stream()))
	jobs := api.NewJobServiceWith(api.JobServiceConfig{Store: rn, Registry: state, Leadership: rn})
	api.Register(gs, jobs, api.NewClusterService(rn, state), api.WithACLService(api.NewACLService(rn, state, nil)))
	cluster.RegisterInternal(gs, rn)
	go func() { _ = gs.Serve(mux.GRPCListener()) }()
	conn, err := grpc.NewClient(self.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rn.Shutdown(ctx)
		mux.Close()
	})
	return &aclNode{id: self.ID, fsm: state, raft: rn, conn: conn}
}

// leaderAndFollowers waits for a leader all nodes agree on.
func leaderAndFollowers(t *testing.T, nodes []*aclNode) (*aclNode, []*aclNode) {
	t.Helper()
	var leader *aclNode
	waitFor(t, 20*time.Second, "a leader every node names", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.raft.IsLeader() {
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if id, _ := n.raft.Leader(); id != leader.id || !n.raft.Ready() {
				return false
			}
		}
		return true
	})
	var followers []*aclNode
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	return leader, followers
}

func bearer(ctx context.Context, secret string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, api.AuthorizationKey, "Bearer "+secret)
}

func wantStatus(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: got %v, want %v", what, err, code)
	}
}

// TestACLThroughFollowers drives every ACL step through followers: writes
// forward to the leader, tokens are checked against each follower's own
// replicated copy, and a token used the moment it was created on another
// node is found after one read barrier.
func TestACLThroughFollowers(t *testing.T) {
	nodes := startACLCluster(t)
	_, followers := leaderAndFollowers(t, nodes)
	a, b := followers[0], followers[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := a.jobs().ListJobs(ctx, &pb.ListJobsRequest{})
	wantStatus(t, "ListJobs without a token", err, codes.Unauthenticated)

	boot, err := a.acl().BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	if err != nil {
		t.Fatalf("bootstrap through follower %s: %v", a.id, err)
	}
	_, err = b.acl().BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	wantStatus(t, "second bootstrap through the other follower", err, codes.FailedPrecondition)

	// The management token, used on b at once, then a write token created
	// on b and used on a at once: each may not have been applied there yet.
	writer, err := b.acl().CreateAclToken(bearer(ctx, boot.GetSecret()), &pb.CreateAclTokenRequest{
		Name: "deployer", Role: pb.AclRole_ACL_ROLE_WRITE,
	})
	if err != nil {
		t.Fatalf("create token on follower %s: %v", b.id, err)
	}
	spec := &pb.JobSpec{Name: "billing", Schedule: "0 2 * * *", Http: &pb.HttpTarget{Url: "http://billing.internal/run"}}
	created, err := a.jobs().CreateJob(bearer(ctx, writer.GetSecret()), &pb.CreateJobRequest{Spec: spec})
	if err != nil {
		t.Fatalf("create job with a fresh token on follower %s: %v", a.id, err)
	}
	if created.GetJob().GetUpdatedBy() != "deployer" {
		t.Fatalf("updated_by %q, want deployer", created.GetJob().GetUpdatedBy())
	}
	// ApplyJobs on a follower is forwarded whole to the leader, which checks
	// the token again.
	batch, err := b.jobs().ApplyJobs(bearer(ctx, writer.GetSecret()), &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{
		{Name: "reports", Schedule: "0 3 * * *", Http: &pb.HttpTarget{Url: "http://reports.internal/run"}},
	}})
	if err != nil || batch.GetResults()[0].GetJob().GetUpdatedBy() != "deployer" {
		t.Fatalf("ApplyJobs through follower %s: %v, %v", b.id, batch, err)
	}

	// Every node replicated who wrote the jobs.
	for _, n := range nodes {
		waitFor(t, 10*time.Second, n.id+" applying both writes", func() bool {
			j1, err1 := n.fsm.Job("billing")
			j2, err2 := n.fsm.Job("reports")
			return err1 == nil && err2 == nil && j1.GetUpdatedBy() == "deployer" && j2.GetUpdatedBy() == "deployer"
		})
	}

	reader, err := a.acl().CreateAclToken(bearer(ctx, boot.GetSecret()), &pb.CreateAclTokenRequest{
		Name: "viewer", Role: pb.AclRole_ACL_ROLE_READ,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.jobs().GetJob(bearer(ctx, reader.GetSecret()), &pb.GetJobRequest{Name: "billing"}); err != nil {
		t.Fatalf("read token reading on %s: %v", b.id, err)
	}
	_, err = b.jobs().DeleteJob(bearer(ctx, reader.GetSecret()), &pb.DeleteJobRequest{Name: "billing"})
	wantStatus(t, "read token deleting", err, codes.PermissionDenied)
	_, err = b.jobs().ListJobs(bearer(ctx, "made-up"), &pb.ListJobsRequest{})
	wantStatus(t, "unknown token", err, codes.Unauthenticated)

	// A token deleted through one follower stops working on the other.
	if _, err := a.acl().DeleteAclToken(bearer(ctx, boot.GetSecret()), &pb.DeleteAclTokenRequest{
		AccessorId: writer.GetToken().GetAccessorId(),
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deleted token to stop working on "+b.id, func() bool {
		_, err := b.jobs().ListJobs(bearer(ctx, writer.GetSecret()), &pb.ListJobsRequest{})
		return status.Code(err) == codes.Unauthenticated
	})
}
