//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestAttacks3 replays the attacks that got through before the hardening of
// the exec environment, the Host check, pool-bound worker tokens,
// revocation, bootstrap, secrets, egress, job history, signatures and run
// containment (README "Threat model"), with real processes: against a
// loopback cluster as `serve` runs by default there (no TLS, no ACLs, as
// `dev --insecure`), then against a cluster on TLS with --acl. Both allow
// /bin/sh for exec jobs, so what refuses an attack is the rule it is about,
// not exec being off. Each step says which finding it replays.
func TestAttacks3(t *testing.T) {
	t.Run("start", checkStartRefused)
	t.Run("loopback", func(t *testing.T) {
		c := newLoopCluster(t)
		c.checkReboundHost()
		c.checkEnvRefused()
		c.checkEgressDenied()
	})
	t.Run("tls-acl", func(t *testing.T) {
		c := newSecureCluster(t, secureOptions{args: execFlags(), nodeArgs: func(n *localcluster.Node) []string {
			if n.ID == envAllowNode {
				return []string{"--exec-env-allow", "LD_PRELOAD"}
			}
			return nil
		}})
		c.checkBootstrapWritesNothing() // first: nothing else commits yet
		c.applyJob(secureJob, fmt.Sprintf("name: %s\nschedule: \"@every 1s\"\nhttp: {url: %q}\n", secureJob, c.sink.url))
		c.sink.waitRising(t, 0, 3, "3 signed runs admitted with rising tokens")
		c.checkEnvRefused()
		worker := c.checkWorkerPools()
		c.checkEnvAtDispatch()
		c.checkSetsidContained()
		leader := c.leaderNode()
		checkEgressDenied(t, c.conn, c.mgmt, map[string]string{
			"metadata-aws":     "http://169.254.169.254/latest/meta-data/",
			"metadata-aws-v6":  "http://[fd00:ec2::254]/latest/meta-data/",
			"metadata-alibaba": "http://100.100.100.200/latest/meta-data/",
			"self":             "https://" + leader.HTTPAddr + "/status",
		})
		checkReboundHost(t, c.opsClient(secureCallTimeout), "https://"+c.httpAddr(1), c.mgmt)
		c.checkForgedDispatch()
		c.checkRecreatedName()
		c.checkSecrets()
		c.checkRevocation(worker)
		c.checkExpiry()
		c.checkRestoreKeepsTokens()
	})
}

// checkStartRefused (finding 9, and the root rule of finding 1): serve
// refuses to start with the ops port off loopback in plaintext under
// --acl, where UI sign-ins would send management tokens in the clear; as
// root, it refuses --exec-allow without --exec-user.
func checkStartRefused(t *testing.T) {
	// An address of TEST-NET-1, which no host has: were the rule gone, the
	// node could not listen there either, so this never serves off loopback.
	const offLoopback = "192.0.2.1:8001"
	bin := plainBinary.get(t)
	dir := t.TempDir()
	serve := func(name string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
		defer cancel()
		args = append([]string{"serve", "--id", "n1", "--data-dir", filepath.Join(dir, name), "--addr", freeLoopbackAddr(t)}, args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = proc.Environ()
		out, err := cmd.CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("raftcron %s: %v, want it to refuse to start\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := serve("http-plain", "--http-addr", offLoopback, "--acl")
	if !strings.Contains(out, "--http-addr "+offLoopback+" is not loopback") || !strings.Contains(out, "needs TLS") {
		t.Errorf("serve --http-addr %s --acl without TLS: %q, want a refusal naming --http-addr and TLS", offLoopback, out)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the rule that root needs --exec-user does not apply")
		return
	}
	out = serve("exec-root", "--exec-allow", "/bin/sh")
	if !strings.Contains(out, "--exec-user: required") {
		t.Errorf("serve --exec-allow as root without --exec-user: %q, want a refusal naming --exec-user", out)
	}
}

// freeLoopbackAddr is a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// envAllowNode is the one node of the TLS cluster whose policy lets jobs
// set LD_PRELOAD: a job registered through it reaches leaders and workers
// whose policies refuse it.
const envAllowNode = "n3"

// execFlags let exec jobs (and workers' commands) run /bin/sh. As root that
// takes --exec-user: root itself here, the user the test runs as.
func execFlags() []string {
	args := []string{"--exec-allow", "/bin/sh"}
	if os.Geteuid() == 0 {
		args = append(args, "--exec-user", "root")
	}
	return args
}

// checkReboundHost (finding 2): a page on a name the attacker controls,
// rebound to a node's address (DNS rebinding), sends that name as Host:
// the JSON API, the UI and its event stream answer 421 whatever token
// comes with it, and a job it PUTs is not created; the ops endpoints answer
// any name, for probes and scrapes. The same PUT with an IP literal as
// Host is taken, so the refusal is about the name.
func checkReboundHost(t *testing.T, client *http.Client, base, token string) {
	t.Helper()
	do := func(method, host, path, body string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), secureCallTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for path, want := range map[string]int{"/v1/jobs": 421, "/ui/": 421, "/ui/api/whoami": 421, "/ui/api/runs/events": 421,
		"/status": 200, "/metrics": 200} {
		if code := do(http.MethodGet, "evil.example", path, ""); code != want {
			t.Errorf("GET %s with Host evil.example: HTTP %d, want %d", path, code, want)
		}
	}
	const job = "rebound"
	spec := fmt.Sprintf(`{"name": %q, "schedule": "0 0 1 1 *", "exec": {"command": ["/bin/sh", "-c", "id"]}}`, job)
	if code := do(http.MethodPut, "evil.example:80", "/v1/jobs/"+job, spec); code != http.StatusMisdirectedRequest {
		t.Fatalf("PUT /v1/jobs/%s (an exec job) with Host evil.example: HTTP %d, want 421", job, code)
	}
	if code := do(http.MethodGet, "localhost", "/v1/jobs/"+job, ""); code != http.StatusNotFound {
		t.Fatalf("GET /v1/jobs/%s after the rebound PUT: HTTP %d, want 404", job, code)
	}
	ip := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
	if code := do(http.MethodPut, ip, "/v1/jobs/"+job, spec); code != http.StatusOK {
		t.Fatalf("PUT /v1/jobs/%s with Host %s: HTTP %d, want 200", job, ip, code)
	}
	if code := do(http.MethodDelete, ip, "/v1/jobs/"+job, ""); code != http.StatusOK {
		t.Fatalf("DELETE /v1/jobs/%s: HTTP %d, want 200", job, code)
	}
}

// checkEgressDenied (finding 7): a webhook to each url (by its job's name)
// fails before any byte leaves, with reason egress_denied in the run
// ledger; any other ending fails the test.
func checkEgressDenied(t *testing.T, conn *grpc.ClientConn, token string, urls map[string]string) {
	t.Helper()
	jobs, runs := pb.NewJobServiceClient(conn), pb.NewRunServiceClient(conn)
	for name, url := range urls {
		spec := &pb.JobSpec{Name: name, Schedule: "@every 1s", Http: &pb.HttpTarget{Url: url, Method: http.MethodGet, KeepResponse: true}}
		if _, err := jobs.ApplyJob(callCtx(t, token), &pb.ApplyJobRequest{Spec: spec}); err != nil {
			t.Fatalf("ApplyJob %s (%s): %v", name, url, err)
		}
	}
	for name, url := range urls {
		testutil.WaitFor(t, secureRunsTimeout, "a run of "+name+" failed with egress_denied", func() bool {
			resp, err := runs.ListRuns(callCtx(t, token), &pb.ListRunsRequest{Job: name})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.GetRuns() {
				switch r.GetState() {
				case pb.RunState_RUN_STATE_FAILED:
					if r.GetReason() == "egress_denied" {
						return true
					}
					t.Fatalf("a run of %s (%s) failed with %q, want egress_denied", name, url, r.GetReason())
				case pb.RunState_RUN_STATE_DISPATCHED, pb.RunState_RUN_STATE_RETRYING:
				default:
					t.Fatalf("a run of %s (%s) ended %s: want it failed with egress_denied", name, url, r.GetState())
				}
			}
			return false
		})
	}
	for name := range urls {
		if _, err := jobs.DeleteJob(callCtx(t, token), &pb.DeleteJobRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkForgedDispatch (finding 10): a request without the key's v2
// signature never reaches the guard, however high its token: neither a
// made-up signature, nor none, nor a genuine v1 signature, which covers the
// run but not the method, the URL or the body (the previous release's);
// the next genuine run, signed v2 by the nodes, is admitted.
func (c *secureCluster) checkForgedDispatch() {
	t := c.t
	before, _ := c.sink.rising()
	at := time.Now().UTC().Truncate(time.Second)
	forged := fence.Run{Token: math.MaxUint64, Job: secureJob, RunID: secureJob + "-forged", Attempt: 1,
		ScheduledAt: at, IdempotencyKey: secureJob + "/" + fence.FormatScheduledAt(at)}
	for _, sig := range []string{"v1=" + randomSecret(t), "", c.keys.Sign(forged)} {
		code, err := c.sink.post(forged, sig)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized {
			t.Fatalf("forged dispatch (signature %q): HTTP %d, want 401", sig, code)
		}
	}
	c.sink.waitRising(t, before, 1, "a genuine run admitted after the forgeries")
	highest, err := c.sink.guard.Highest(context.Background(), secureJob)
	if err != nil {
		t.Fatal(err)
	}
	if _, last := c.sink.rising(); highest != last {
		t.Errorf("high-water mark of %s is %d after the forgeries, want %d (the last genuine token)", secureJob, highest, last)
	}
}

// leaderNode is the node whose /status says it leads.
func (c *secureCluster) leaderNode() *localcluster.Node {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leaderTimeout)
	defer cancel()
	n, err := c.lc.Leader(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// wantDenied fails the test unless err is PermissionDenied naming what.
func wantDenied(t *testing.T, call string, err error, what string) {
	t.Helper()
	if st := wantCode(t, call, err, codes.PermissionDenied); !strings.Contains(st.Message(), what) {
		t.Errorf("%s: %q, want it to name %s", call, st.Message(), what)
	}
}
