//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/syncbuf"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// revocationBound is how soon a revoked token's open stream must end.
const revocationBound = time.Second

// Bounds of the worker processes: one that should be refused at once, and
// the one that serves until its token is deleted.
const (
	refusedWorkerTimeout = 15 * time.Second
	workerTimeout        = 2 * time.Minute
)

// bootstrapAttempts is how many `acl bootstrap` calls a stranger makes.
const bootstrapAttempts = 20

// checkBootstrapWritesNothing (finding 5): once bootstrapped, every node
// refuses `acl bootstrap` from its own state: 20 calls spread over the
// nodes leave the commit index where it was. It runs while nothing else
// commits, once every node has applied the bootstrap (a node that has not
// yet reads the leader's state first, which may append a barrier).
func (c *secureCluster) checkBootstrapWritesNothing() {
	t := c.t
	leader := c.leaderNode()
	before := c.status(leader).CommitIndex
	testutil.WaitFor(t, secureCallTimeout, fmt.Sprintf("every node applied index %d", before), func() bool {
		for _, n := range c.lc.Nodes() {
			if c.status(n).AppliedIndex < before {
				return false
			}
		}
		return true
	})
	for i := range bootstrapAttempts {
		acl := pb.NewAclServiceClient(c.dial(c.addr(i % secureNodes)))
		_, err := acl.BootstrapAcl(callCtx(t, ""), &pb.BootstrapAclRequest{})
		if st := wantCode(t, fmt.Sprintf("acl bootstrap #%d", i+2), err, codes.FailedPrecondition); !strings.Contains(st.Message(), "bootstrapped already") {
			t.Fatalf("acl bootstrap #%d: %q, want it refused as bootstrapped already", i+2, st.Message())
		}
	}
	if after := c.status(leader).CommitIndex; after != before {
		t.Fatalf("commit index %d after %d refused bootstraps, was %d: they wrote to the log", after, bootstrapAttempts, before)
	}
	t.Logf("%d refused bootstraps left the commit index at %d", bootstrapAttempts, before)
}

// status is n's /status.
func (c *secureCluster) status(n *localcluster.Node) ops.Status {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), secureCallTimeout)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// checkWorkerPools (finding 3): a worker whose token is bound to pool
// batch (at most 2 at once) is refused, and stops, when it asks for pool
// payments or for 100000 attempts at once; in its own pool, within its
// cap, it connects and stays. The worker is returned, connected.
func (c *secureCluster) checkWorkerPools() *openStream {
	t := c.t
	batch := c.tokenFile("batch-worker", c.createToken("batch-worker", "worker", "--pool", "batch", "--max-concurrency", "2"))
	for _, tc := range []struct{ args, want string }{
		{"--pool payments --concurrency 1", `PermissionDenied desc = hello.pool: this worker's ACL token may serve the pools batch, not "payments"`},
		{"--pool batch --concurrency 100000", "PermissionDenied desc = hello.concurrency"},
	} {
		args := append([]string{"worker", "--id", "intruder"}, strings.Fields(tc.args)...)
		out, err := c.client(batch, refusedWorkerTimeout, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Fatalf("a worker %s with a token of pool batch, at most 2: %v, want it refused (%s) and stopped\n%s", tc.args, err, tc.want, out)
		}
	}
	return c.startWorker(batch, append([]string{"--id", "batch-1", "--pool", "batch", "--concurrency", "2"}, execFlags()...)...)
}

// checkRevocation (finding 4): the streams opened with a token — `run
// watch`, the web UI's event stream (on another node), a worker session —
// end within a second of the token's deletion, each saying why.
func (c *secureCluster) checkRevocation(worker *openStream) {
	t := c.t
	watch := c.openWatch(c.tokenFile("watcher", c.createToken("watcher", "read")))
	events := c.openEvents(c.createToken("ui-viewer", "read"))
	for _, s := range []struct {
		token  string
		stream *openStream
		want   string
	}{
		{"watcher", watch, "not authenticated: ACL token deleted"},
		{"ui-viewer", events, `"code":16`},
		{"batch-worker", worker, "Unauthenticated"},
	} {
		deleted := c.deleteToken(s.token)
		select {
		case <-s.stream.ended:
			if !strings.Contains(s.stream.output.String(), s.want) {
				t.Errorf("%s of the deleted token %s ended saying %q; want %q", s.stream.what, s.token, s.stream.output.String(), s.want)
			}
			t.Logf("%s of the deleted token ended at most %s after the deletion returned",
				s.stream.what, max(s.stream.at.Sub(deleted), 0).Round(time.Millisecond))
		case <-time.After(revocationBound):
			t.Errorf("%s of the deleted token %s still open %s after the deletion", s.stream.what, s.token, revocationBound)
		}
	}
}

// checkRecreatedName (finding 8): a token scoped to team=h re-creates the
// name of a deleted job of its team and sees none of the deleted job's
// runs; the management token still reads them, marked as the deleted
// job's.
func (c *secureCluster) checkRecreatedName() {
	t := c.t
	downstream := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer downstream.Close()
	const name = "payroll"
	spec := func() *pb.JobSpec {
		return &pb.JobSpec{Name: name, Schedule: "0 0 1 1 *", Labels: map[string]string{"team": "h"}, Http: &pb.HttpTarget{Url: downstream.URL}}
	}
	scoped := c.createToken("team-h", "write", "--selector", "team=h")
	c.putJob(spec())
	old := c.runToEnd(c.trigger(name))
	if old.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("run of the first %s: %s, want succeeded", name, old.GetState())
	}
	c.deleteJob(name)
	jobs, runs := pb.NewJobServiceClient(c.conn), pb.NewRunServiceClient(c.conn)
	if _, err := jobs.CreateJob(callCtx(t, scoped), &pb.CreateJobRequest{Spec: spec()}); err != nil {
		t.Fatalf("CreateJob %s again with the team=h token: %v", name, err)
	}
	for _, req := range []*pb.ListRunsRequest{{Job: name}, {}} {
		for page := 0; ; page++ {
			resp, err := runs.ListRuns(callCtx(t, scoped), req)
			if err != nil {
				t.Fatalf("ListRuns %v with the team=h token: %v", req, err)
			}
			for _, r := range resp.GetRuns() {
				if r.GetJob() == name {
					t.Errorf("ListRuns %v with the team=h token shows run %s of the deleted %s", req, r.GetId(), name)
				}
			}
			if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" || page > 100 {
				break
			}
		}
	}
	_, err := runs.GetRun(callCtx(t, scoped), &pb.GetRunRequest{Id: old.GetId()})
	wantCode(t, "GetRun of the deleted job's run with the team=h token", err, codes.NotFound)
	resp, err := runs.GetRun(callCtx(t, c.mgmt), &pb.GetRunRequest{Id: old.GetId()})
	if err != nil || !resp.GetRun().GetJobDeleted() {
		t.Errorf("GetRun %s with the management token: %v, job_deleted %v; want the run, marked job_deleted", old.GetId(), err, resp.GetRun().GetJobDeleted())
	}
	c.deleteJob(name)
}

// openStream is a stream a client holds open with a token.
type openStream struct {
	what   string
	output *syncbuf.Buffer // what it printed or received
	ended  chan struct{}   // closed when it ends
	at     time.Time       // when it ended; read after ended
}

func newOpenStream(what string) *openStream {
	return &openStream{what: what, output: &syncbuf.Buffer{}, ended: make(chan struct{})}
}

func (s *openStream) end() {
	s.at = time.Now()
	close(s.ended)
}

// startProcess starts cmd, its output into the stream's, and waits until
// the output holds ready.
func (c *secureCluster) startProcess(s *openStream, cmd *exec.Cmd, ready string) *openStream {
	c.t.Helper()
	cmd.Stdout, cmd.Stderr = s.output, s.output
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		s.end()
	}()
	testutil.WaitFor(c.t, secureRunsTimeout, s.what+" in place", func() bool {
		select {
		case <-s.ended:
			c.t.Fatalf("%s ended: %s", s.what, s.output.String())
		default:
		}
		return strings.Contains(s.output.String(), ready)
	})
	return s
}

// openWatch runs `run watch` with the token in tokenFile, until it prints
// a run (the job fires every second).
func (c *secureCluster) openWatch(tokenFile string) *openStream {
	return c.startProcess(newOpenStream("run watch"), c.client(tokenFile, time.Minute, "run", "watch"), secureJob)
}

// startWorker runs `raftcron worker` with the token in tokenFile until it
// says it is connected.
func (c *secureCluster) startWorker(tokenFile string, args ...string) *openStream {
	return c.startProcess(newOpenStream("worker session"), c.client(tokenFile, workerTimeout, append([]string{"worker"}, args...)...),
		"connected to the leader")
}

// openEvents opens the web UI's run event stream on n2 with secret, as the
// UI's page does, until the stream says it is in place.
func (c *secureCluster) openEvents(secret string) *openStream {
	t := c.t
	s := newOpenStream("UI event stream")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.httpAddr(1)+"/ui/api/runs/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := c.opsClient(0).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET /ui/api/runs/events: HTTP %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || lines.Text() != "event: ready" {
		t.Fatalf("UI event stream began with %q, want event: ready", lines.Text())
	}
	go func() {
		defer resp.Body.Close()
		for lines.Scan() {
			fmt.Fprintln(s.output, lines.Text())
		}
		s.end()
	}()
	return s
}

// deleteToken deletes the token called name with the management token and
// returns when the deletion returned.
func (c *secureCluster) deleteToken(name string) time.Time {
	t := c.t
	acl := pb.NewAclServiceClient(c.conn)
	list, err := acl.ListAclTokens(callCtx(t, c.mgmt), &pb.ListAclTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list.GetTokens() {
		if tok.GetName() == name {
			if _, err := acl.DeleteAclToken(callCtx(t, c.mgmt), &pb.DeleteAclTokenRequest{AccessorId: tok.GetAccessorId()}); err != nil {
				t.Fatalf("DeleteAclToken %s: %v", name, err)
			}
			return time.Now()
		}
	}
	t.Fatalf("no ACL token called %s", name)
	return time.Time{}
}

// tokenFile writes a token's secret into a file of its own, as an operator
// keeps it.
func (c *secureCluster) tokenFile(name, secret string) string {
	c.t.Helper()
	path := filepath.Join(c.dir, name+".token")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// client is a raftcron client command against n1 over TLS, its token read
// from tokenFile, killed after limit.
func (c *secureCluster) client(tokenFile string, limit time.Duration, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	c.t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(proc.Environ(), "RAFTCRON_ADDR="+c.addr(0), "RAFTCRON_CA_CERT="+c.caCert(),
		fmt.Sprintf("RAFTCRON_TOKEN_FILE=%s", tokenFile))
	return cmd
}

// tokenTTL is the life of the token whose stream must end at its expiry.
const tokenTTL = 5 * time.Second

// checkExpiry (finding 11: tokens never expired): a token made with a ttl
// opens a run watch; at its expiry the watch ends (within a second), and
// the token is unknown from then on.
func (c *secureCluster) checkExpiry() {
	t := c.t
	resp, err := pb.NewAclServiceClient(c.conn).CreateAclToken(callCtx(t, c.mgmt), &pb.CreateAclTokenRequest{
		Name: "short-lived", Role: pb.AclRole_ACL_ROLE_READ, Ttl: durationpb.New(tokenTTL)})
	if err != nil {
		t.Fatalf("CreateAclToken --ttl %s: %v", tokenTTL, err)
	}
	expires := resp.GetToken().GetExpiresAt().AsTime()
	watch := c.openWatch(c.tokenFile("short-lived", resp.GetSecret()))
	select {
	case <-watch.ended:
		if !strings.Contains(watch.output.String(), "not authenticated") {
			t.Errorf("run watch of the expiring token ended saying %q; want not authenticated", watch.output.String())
		}
		if late := watch.at.Sub(expires); late < 0 || late > revocationBound {
			t.Errorf("run watch of the token that expires at %s ended at %s (%s after), want within %s after it",
				expires.Format(time.RFC3339Nano), watch.at.Format(time.RFC3339Nano), late, revocationBound)
		}
		t.Logf("run watch of the expired token ended %s after its expiry", watch.at.Sub(expires).Round(time.Millisecond))
	case <-time.After(time.Until(expires) + revocationBound):
		t.Fatalf("run watch of the token that expired at %s still open", expires.Format(time.RFC3339Nano))
	}
	_, err = pb.NewJobServiceClient(c.conn).GetJob(callCtx(t, resp.GetSecret()), &pb.GetJobRequest{Name: secureJob})
	wantCode(t, "GetJob with the expired token", err, codes.Unauthenticated)
}

// checkRestoreKeepsTokens (finding 11: a restore brought back deleted
// tokens): a token deleted after a `snapshot save` stays deleted when the
// file is restored, and the audit trail records the restore.
func (c *secureCluster) checkRestoreKeepsTokens() {
	t := c.t
	secret := c.createToken("restored-away", "read")
	saved := filepath.Join(c.dir, "before-delete.snap")
	if _, err := c.cli(c.mgmt, "snapshot", "save", saved); err != nil {
		t.Fatal(err)
	}
	c.deleteToken("restored-away")
	if _, err := c.cli(c.mgmt, "snapshot", "restore", saved); err != nil {
		t.Fatal(err)
	}
	_, err := pb.NewJobServiceClient(c.conn).GetJob(callCtx(t, secret), &pb.GetJobRequest{Name: secureJob})
	wantCode(t, "GetJob with the token deleted after the snapshot, once restored", err, codes.Unauthenticated)
	audit, err := pb.NewAuditServiceClient(c.conn).ListAudit(callCtx(t, c.mgmt), &pb.ListAuditRequest{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range audit.GetRecords() {
		if r.GetAction() == "snapshot_restore" {
			return
		}
	}
	t.Errorf("the last audit records hold no snapshot_restore: %v", audit.GetRecords())
}
