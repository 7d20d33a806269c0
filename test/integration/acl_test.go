package integration

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// aclClient is the API of one node of a cluster started with ACLs on
// (serve --acl), wired by package server as every other node here.
type aclClient struct {
	*node
	conn *grpc.ClientConn
}

func (c aclClient) jobs() pb.JobServiceClient { return pb.NewJobServiceClient(c.conn) }
func (c aclClient) acl() pb.AclServiceClient  { return pb.NewAclServiceClient(c.conn) }

// startACLCluster starts three nodes with ACLs on and returns a client of
// the leader and of each follower, once they agree on the leader.
func startACLCluster(t *testing.T) (leader aclClient, followers []aclClient) {
	t.Helper()
	tc := newCluster(t, 3, func(n *node) { n.acl = true })
	lead := tc.waitLeader(3, 20*time.Second)
	// Writes record their principal from cluster version 2 on, which the
	// first leader raises once every voter answers.
	testutil.WaitFor(t, 20*time.Second, "the cluster version raised on every node", func() bool {
		for _, n := range tc.nodes {
			if n.srv.FSM().ClusterVersion() != fsm.CommandVersion {
				return false
			}
		}
		return true
	})
	for _, n := range tc.nodes {
		conn, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		c := aclClient{node: n, conn: conn}
		if n == lead {
			leader = c
		} else {
			followers = append(followers, c)
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
	leader, followers := startACLCluster(t)
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
	for _, n := range []aclClient{leader, a, b} {
		testutil.WaitFor(t, 10*time.Second, n.id+" applying both writes", func() bool {
			j1, err1 := n.fsm().Job("billing")
			j2, err2 := n.fsm().Job("reports")
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
	testutil.WaitFor(t, 10*time.Second, "the deleted token to stop working on "+b.id, func() bool {
		_, err := b.jobs().ListJobs(bearer(ctx, writer.GetSecret()), &pb.ListJobsRequest{})
		return status.Code(err) == codes.Unauthenticated
	})
}
