package localcluster_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), clustertest.ReadyTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestSecureClusterThroughItsFaults runs a cluster as dev does (TLS,
// client certificates, ACLs) through every fault the package offers: a
// paused leader is replaced and comes back, a killed node restarts on its
// data, a fourth node joins, and the graceful stop ends every node with
// exit status 0.
func TestSecureClusterThroughItsFaults(t *testing.T) {
	c := clustertest.Start(t, localcluster.Options{Nodes: 3, TLS: true, VerifyClients: true, ACL: true})
	ctx := ctxFor(t)

	f := c.TLSFiles()
	for _, path := range []string{f.CA, f.CAKey, f.ClientCert, f.ClientKey, f.Node("n1").Cert, f.Node("n3").Key} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("TLS material: %v", err)
		}
	}
	n1 := c.Node("n1")
	if resp, err := http.Get("http://" + n1.HTTPAddr + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP /readyz answered 200: the ops port should be HTTPS only")
		}
	}
	conn, err := c.Dial(n1)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	jobs := pb.NewJobServiceClient(conn)
	if _, err := jobs.ListJobs(ctx, &pb.ListJobsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("ListJobs without the token: %v, want Unauthenticated", err)
	}
	if _, err := jobs.ListJobs(c.WithToken(ctx), &pb.ListJobsRequest{}); err != nil {
		t.Errorf("ListJobs with the token Start bootstrapped: %v", err)
	}

	leader := clustertest.Leader(t, c)
	if err := c.Pause(leader.ID); err != nil {
		t.Fatal(err)
	}
	if leader.State() != localcluster.Paused {
		t.Fatalf("%s is %s after Pause", leader.ID, leader.State())
	}
	next := clustertest.Leader(t, c)
	if next == leader {
		t.Fatalf("the paused %s still counts as leader", leader.ID)
	}
	if err := c.Resume(leader.ID); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitReady(t, c)

	victim := c.Followers(clustertest.Leader(t, c))[0]
	pid := victim.Pid()
	if err := c.Kill(victim.ID); err != nil {
		t.Fatal(err)
	}
	if victim.State() != localcluster.Down || !victim.Process().Killed() {
		t.Fatalf("%s after Kill: %s", victim.ID, victim.State())
	}
	if err := c.Restart(victim.ID); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitReady(t, c, victim)
	if victim.Pid() == pid {
		t.Errorf("%s restarted with the same pid %d", victim.ID, pid)
	}

	n4, err := c.Add("n4", nil)
	if err != nil {
		t.Fatal(err)
	}
	clustertest.WaitReady(t, c, n4)
	testutil.WaitFor(t, clustertest.ReadyTimeout, "n4 among the members", func() bool {
		st, err := clustertest.Leader(t, c).Status(ctx)
		return err == nil && len(st.Servers) == 4 && slices.ContainsFunc(st.Servers, func(m ops.Member) bool { return m.ID == "n4" })
	})

	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		if code := n.Process().ExitCode(); code != 0 {
			t.Errorf("%s exited %d on a graceful stop; last log line %q", n.ID, code, n.LastLog())
		}
	}
}

// A node that cannot start says why: WaitReady names it, how it ended and
// its last words.
func TestWaitReadyNamesANodeThatExited(t *testing.T) {
	c, err := localcluster.Launch(localcluster.Options{Binary: testutil.Binary(t), Dir: t.TempDir(), Nodes: 1,
		Args: []string{"--raft-heartbeat", "soon"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Crash()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.WaitReady(ctx)
	if err == nil || !strings.Contains(err.Error(), "n1 exited while starting: exit status 2") || !strings.Contains(err.Error(), "--raft-heartbeat") {
		t.Fatalf("WaitReady on a node refused at start: %v", err)
	}
}
