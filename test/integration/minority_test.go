package integration

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A cluster that survives the loss of a minority accepts every command it
// accepted before the loss: with one node of three down, every write the
// API offers succeeds — jobs, ACLs, a cancel, a snapshot restore, and the
// membership changes that replace the lost node.
func TestEveryWriteSucceedsWithAMinorityDown(t *testing.T) {
	tc := newCluster(t, 3, func(n *node) { n.acl = true })
	tc.waitLeader(3, 20*time.Second)
	testutil.WaitFor(t, 20*time.Second, "the cluster version raised on every node", func() bool {
		for _, n := range tc.nodes {
			if n.fsm().ClusterVersion() != fsm.CommandVersion {
				return false
			}
		}
		return true
	})
	leader := tc.waitLeader(3, 10*time.Second)
	followers := tc.followersOf(leader)
	down, via := followers[0], followers[1]
	down.crash()
	leader = tc.waitLeader(2, 10*time.Second)
	t.Logf("%s down; writes through %s, leader %s", down.id, via.id, leader.id)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := dial(t, via.addr)
	acl := pb.NewAclServiceClient(conn)
	boot, err := acl.BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	must(t, "acl bootstrap", err)
	ctx = bearer(ctx, boot.GetSecret())
	tok, err := acl.CreateAclToken(ctx, &pb.CreateAclTokenRequest{Name: "deployer", Role: pb.AclRole_ACL_ROLE_WRITE})
	must(t, "acl token create", err)
	_, err = acl.DeleteAclToken(ctx, &pb.DeleteAclTokenRequest{AccessorId: tok.GetToken().GetAccessorId()})
	must(t, "acl token delete", err)

	jobs := pb.NewJobServiceClient(conn)
	held := holdingTarget(t)
	spec := &pb.JobSpec{Name: "held", Schedule: "0 0 1 1 *", Http: &pb.HttpTarget{Url: held}}
	_, err = jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
	must(t, "job create", err)
	spec.Schedule = "0 0 2 1 *"
	_, err = jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: spec})
	must(t, "job update", err)
	spec.Schedule = "0 0 3 1 *"
	_, err = jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
	must(t, "job apply", err)
	other := &pb.JobSpec{Name: "other", Schedule: "@daily", Http: &pb.HttpTarget{Url: held}}
	_, err = jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{other}})
	must(t, "job apply (several)", err)
	_, err = jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "held"})
	must(t, "job pause", err)
	_, err = jobs.ResumeJob(ctx, &pb.ResumeJobRequest{Name: "held"})
	must(t, "job resume", err)
	trig, err := jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "held"})
	must(t, "job trigger", err)
	_, err = pb.NewRunServiceClient(conn).CancelRun(ctx, &pb.CancelRunRequest{Id: trig.GetRun().GetId()})
	must(t, "run cancel", err)
	_, err = jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: "other"})
	must(t, "job delete", err)

	snap := pb.NewSnapshotServiceClient(dial(t, leader.addr))
	file := saveSnapshot(ctx, t, snap)
	restore, err := snap.RestoreSnapshot(ctx)
	must(t, "snapshot restore", err)
	must(t, "snapshot restore", restore.Send(&pb.RestoreSnapshotRequest{Chunk: file}))
	_, err = restore.CloseAndRecv()
	must(t, "snapshot restore", err)

	members := pb.NewClusterServiceClient(conn)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A fresh node with neither peers nor a cluster to join waits to be
	// added (`cluster join`).
	fresh := &node{t: t, id: "n4", addr: ln.Addr().String(), dir: t.TempDir(), gains: tc.gains, acl: true}
	fresh.start(ln)
	tc.nodes = append(tc.nodes, fresh)
	_, err = members.AddNode(ctx, &pb.AddNodeRequest{Id: fresh.id, Address: fresh.addr})
	must(t, "cluster join", err)
	_, err = members.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: down.id})
	must(t, "cluster remove", err)
	moved, err := members.TransferLeadership(ctx, &pb.TransferLeadershipRequest{})
	must(t, "cluster transfer", err)
	if moved.GetLeader().GetId() == leader.id {
		t.Errorf("cluster transfer: %s still leads", leader.id)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// dial is a plaintext client connection to addr, closed with the test.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// holdingTarget is a webhook that answers only once its caller gives up
// (a cancelled run) or the test ends: a run of it stays open until then.
func holdingTarget(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return srv.URL
}

// saveSnapshot is the backup file the leader streams.
func saveSnapshot(ctx context.Context, t *testing.T, c pb.SnapshotServiceClient) []byte {
	t.Helper()
	stream, err := c.SaveSnapshot(ctx, &pb.SaveSnapshotRequest{})
	must(t, "snapshot save", err)
	var file []byte
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return file
		}
		must(t, "snapshot save", err)
		file = append(file, resp.GetChunk()...)
	}
}
