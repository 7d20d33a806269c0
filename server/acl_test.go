package server

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// bootstrapSecret is the test's --acl-bootstrap-file content.
const bootstrapSecret = "rc-test-bootstrap-secret-0123456789abcdef"

// withToken is ctx carrying secret as the call's token.
func withToken(ctx context.Context, secret string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)
}

// A cluster given the bootstrap secret has its first management token as
// soon as it has a leader, and refuses `acl bootstrap` on every node
// without a write. A worker token serves its pool alone, within its cap.
// Deleting a token ends its streams on every node within a second: a run
// watch on a follower, the UI's event stream on another, a worker session
// on the leader.
func TestACLsOnARealCluster(t *testing.T) {
	servers := startCluster(t, 3, func(c *Config) { c.ACL, c.ACLBootstrapSecret = true, bootstrapSecret })
	leader, followers := leaderOf(t, servers)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	acl := pb.NewAclServiceClient(dialPlain(t, followers[0].Addr()))
	mgmt := withToken(ctx, bootstrapSecret)
	// Waited for on each node's own state: a read through a follower that
	// lags may have the leader append a barrier to tell it the commit
	// index (cluster's announceCommit), which would move the index below.
	testutil.WaitFor(t, 10*time.Second, "every node applied the bootstrap", func() bool {
		for _, s := range servers {
			if !s.FSM().ACLBootstrapped() {
				return false
			}
		}
		return true
	})

	term, before := leader.Node().Term(), leader.Node().Status().GetCommitIndex()
	for _, s := range servers {
		_, err := pb.NewAclServiceClient(dialPlain(t, s.Addr())).BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "--acl-bootstrap-file") {
			t.Fatalf("BootstrapAcl on %s: %v, want FailedPrecondition naming --acl-bootstrap-file", s.cfg.ID, err)
		}
	}
	if after := leader.Node().Status().GetCommitIndex(); after != before || leader.Node().Term() != term {
		t.Fatalf("refused bootstraps moved the commit index from %d to %d (term %d to %d)", before, after, term, leader.Node().Term())
	}

	create := func(req *pb.CreateAclTokenRequest) string {
		t.Helper()
		resp, err := acl.CreateAclToken(mgmt, req)
		if err != nil {
			t.Fatalf("CreateAclToken %s: %v", req.GetName(), err)
		}
		return resp.GetSecret()
	}
	if _, err := acl.ListAclTokens(mgmt, &pb.ListAclTokensRequest{}); err != nil {
		t.Fatalf("the file's secret as the management token: %v", err)
	}
	read := create(&pb.CreateAclTokenRequest{Name: "viewer", Role: pb.AclRole_ACL_ROLE_READ})
	worker := create(&pb.CreateAclTokenRequest{Name: "payments-worker", Role: pb.AclRole_ACL_ROLE_WORKER,
		Pools: []string{"payments"}, MaxConcurrency: 2})

	workers := pb.NewWorkerServiceClient(dialPlain(t, leader.Addr()))
	connect := func(pool string, concurrency uint32) (pb.WorkerService_ConnectClient, error) {
		stream, err := workers.Connect(withToken(ctx, worker))
		if err != nil {
			return nil, err
		}
		hello := &pb.WorkerHello{Id: "w-" + pool, Pool: pool, Concurrency: concurrency, Commands: true}
		if err := stream.Send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Hello{Hello: hello}}); err != nil {
			return nil, err
		}
		_, err = stream.Recv() // the welcome
		return stream, err
	}
	for _, tc := range []struct {
		pool        string
		concurrency uint32
		field       string
	}{{"batch", 1, "hello.pool"}, {"payments", 100_000, "hello.concurrency"}} {
		if _, err := connect(tc.pool, tc.concurrency); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), tc.field) {
			t.Fatalf("worker of pool %s at %d: %v, want PermissionDenied naming %s", tc.pool, tc.concurrency, err, tc.field)
		}
	}
	session, err := connect("payments", 2)
	if err != nil {
		t.Fatalf("worker of its own pool: %v", err)
	}

	watch, err := pb.NewRunServiceClient(dialPlain(t, followers[0].Addr())).WatchRuns(withToken(ctx, read), &pb.WatchRunsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	events := openEvents(t, ctx, followers[1].HTTPAddr(), read)

	type end struct {
		what string
		err  error
		at   time.Time
	}
	ends := make(chan end, 3)
	wait := func(what string, recv func() error) {
		go func() {
			err := recv()
			ends <- end{what, err, time.Now()}
		}()
	}
	wait("the worker session on the leader", func() error {
		for {
			if _, err := session.Recv(); err != nil {
				return err
			}
		}
	})
	wait("the run watch on a follower", func() error { _, err := watch.Recv(); return err })
	wait("the UI's event stream on the other follower", events)

	var deleted time.Time
	for _, name := range []string{"viewer", "payments-worker"} {
		if _, err := acl.DeleteAclToken(mgmt, &pb.DeleteAclTokenRequest{AccessorId: accessorOf(t, acl, mgmt, name)}); err != nil {
			t.Fatal(err)
		}
		deleted = time.Now()
	}
	for range 3 {
		select {
		case e := <-ends:
			if st := status.Convert(e.err); st.Code() != codes.Unauthenticated || e.at.Sub(deleted) > time.Second {
				t.Errorf("%s ended %s after the deletions with %v, want Unauthenticated within a second",
					e.what, e.at.Sub(deleted), e.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a stream of a deleted token still open 5s after the deletion")
		}
	}
}

// openEvents opens the UI's run event stream on httpAddr with secret and
// returns what ends it: the status its error event carries.
func openEvents(t *testing.T, ctx context.Context, httpAddr, secret string) func() error {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/ui/api/runs/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && lines.Text() != "event: ready" {
	}
	return func() error {
		for lines.Scan() {
			if lines.Text() != "event: error" || !lines.Scan() {
				continue
			}
			if strings.Contains(lines.Text(), `"code":16`) { // Unauthenticated
				return status.Error(codes.Unauthenticated, lines.Text())
			}
			return errors.New(lines.Text())
		}
		return errors.New("the event stream ended without an error event")
	}
}

func accessorOf(t *testing.T, acl pb.AclServiceClient, mgmt context.Context, name string) string {
	t.Helper()
	list, err := acl.ListAclTokens(mgmt, &pb.ListAclTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list.GetTokens() {
		if tok.GetName() == name {
			return tok.GetAccessorId()
		}
	}
	t.Fatalf("no token named %s", name)
	return ""
}

func TestValidateRefusesABadBootstrapSecret(t *testing.T) {
	for _, tc := range []struct {
		acl    bool
		secret string
		rule   string
	}{
		{false, bootstrapSecret, "needs ACLs on"},
		{true, "short", "32 to 4096 characters"},
		{true, bootstrapSecret + " x", "without spaces"},
	} {
		cfg := Config{ID: "n1", DataDir: t.TempDir(), Addr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:0",
			ACL: tc.acl, ACLBootstrapSecret: tc.secret}
		var ce *cluster.ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != FieldACLBootstrapSecret || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("ACL %v, secret %q: %v, want a ConfigError of %s saying %q", tc.acl, tc.secret, err, FieldACLBootstrapSecret, tc.rule)
		}
	}
}
