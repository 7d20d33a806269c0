//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// secureJob fires every second into the fenced downstream for the whole
// scenario: every check below runs while it fires.
const secureJob = "tick"

// intruderTimeout bounds the foreign node's life: serve gives up joining
// after 30 s of refused attempts (cluster's joinTimeout, each attempt at
// most 5 s), then exits.
const intruderTimeout = 60 * time.Second

// TestSecure3 is the trust boundary of DESIGN §11 with real processes: a
// cluster of three nodes on TLS with --acl, exec left off and signed
// dispatches, whose job fires into a downstream that verifies signatures
// before its fence. While it fires, strangers try every way in that the
// boundary closes: plaintext gRPC and Raft, calls without a token, with an
// unknown one, with a token of too small a role or scope, an exec job, and
// a fourth node with another CA's certificate. The node certificates are
// also replaced and reloaded on SIGHUP. The attacks that got through that
// boundary before (DNS rebinding, egress to the node itself, forged and v1
// signatures, bootstrap, worker pools, revocation, secrets) are
// TestAttacks3's.
func TestSecure3(t *testing.T) {
	c := newSecureCluster(t, secureOptions{})
	intruder := c.startIntruder() // its join attempts fail while the rest runs
	c.applyJob(secureJob, fmt.Sprintf("name: %s\nschedule: \"@every 1s\"\nhttp: {url: %q}\n", secureJob, c.sink.url))
	c.sink.waitRising(t, 0, 3, "3 signed runs admitted with rising tokens")

	c.checkPlaintextRefused()
	c.checkTokens()
	c.checkGrpcurl()
	c.checkExecRefused()
	c.checkCertReload()
	c.checkIntruderKeptOut(intruder)
}

// checkPlaintextRefused: without TLS a client gets no answer at all, on
// gRPC or on the plaintext Raft protocol.
func (c *secureCluster) checkPlaintextRefused() {
	t := c.t
	conn, err := grpc.NewClient(c.addr(0), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(callCtx(t, ""), &healthpb.HealthCheckRequest{})
	wantCode(t, "plaintext gRPC health check", err, codes.Unavailable)

	raw, err := net.Dial("tcp", c.addr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write([]byte{0x01, 0x00}) // the plaintext Raft byte, then an AppendEntries type
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, raw)
	var ne net.Error
	if n > 0 || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("plaintext Raft: %d bytes back, err %v; want the connection closed unanswered", n, err)
	}
}

// checkTokens: deny by default, roles and scopes, over TLS without a client
// certificate, so that the token alone decides.
func (c *secureCluster) checkTokens() {
	t := c.t
	jobs := pb.NewJobServiceClient(c.conn)
	reader := c.createToken("reader", "read")
	teamA := c.createToken("team-a", "write", "--selector", "team=a")
	get := &pb.GetJobRequest{Name: secureJob}

	_, err := jobs.GetJob(callCtx(t, ""), get)
	wantCode(t, "GetJob without a token", err, codes.Unauthenticated)
	_, err = jobs.GetJob(callCtx(t, randomSecret(t)), get)
	wantCode(t, "GetJob with an unknown token", err, codes.Unauthenticated)

	// The JSON API on the HTTPS ops port goes through the same ACLs; the
	// port serves nothing in plain HTTP, where a token would be readable.
	if plain, err := (&http.Client{Timeout: secureCallTimeout}).Get("http://" + c.httpAddr(0) + "/v1/jobs/" + secureJob); err == nil {
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS ops port: HTTP %d, want 400 (Go's answer to HTTP on an HTTPS port)", plain.StatusCode)
		}
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {randomSecret(t), http.StatusUnauthorized}, {c.mgmt, http.StatusOK}} {
		if code := c.httpGet(c.httpAddr(0), "/v1/jobs/"+secureJob, tc.token); code != tc.want {
			t.Fatalf("GET /v1/jobs/%s (token %t): HTTP %d, want %d", secureJob, tc.token != "", code, tc.want)
		}
	}

	if _, err := jobs.GetJob(callCtx(t, reader), get); err != nil {
		t.Fatalf("GetJob with the read token: %v", err)
	}
	_, err = jobs.PauseJob(callCtx(t, reader), &pb.PauseJobRequest{Name: secureJob})
	wantCode(t, "PauseJob with the read token", err, codes.PermissionDenied)
	_, err = jobs.DeleteJob(callCtx(t, reader), &pb.DeleteJobRequest{Name: secureJob})
	wantCode(t, "DeleteJob with the read token", err, codes.PermissionDenied)
	_, err = jobs.ApplyJob(callCtx(t, reader), &pb.ApplyJobRequest{Spec: c.yearlyJob("reader-job", nil)})
	wantCode(t, "ApplyJob with the read token", err, codes.PermissionDenied)

	// In scope the token writes; that is what makes the refusals below
	// about the scope.
	mine := c.yearlyJob("team-a-report", map[string]string{"team": "a"})
	if _, err := jobs.CreateJob(callCtx(t, teamA), &pb.CreateJobRequest{Spec: mine}); err != nil {
		t.Fatalf("CreateJob in scope with the team=a token: %v", err)
	}
	_, err = jobs.GetJob(callCtx(t, teamA), get)
	wantCode(t, "GetJob outside the scope", err, codes.NotFound)
	_, err = jobs.PauseJob(callCtx(t, teamA), &pb.PauseJobRequest{Name: secureJob})
	wantCode(t, "PauseJob outside the scope", err, codes.NotFound)
	_, err = jobs.DeleteJob(callCtx(t, teamA), &pb.DeleteJobRequest{Name: secureJob})
	wantCode(t, "DeleteJob outside the scope", err, codes.NotFound)
	_, err = jobs.CreateJob(callCtx(t, teamA), &pb.CreateJobRequest{Spec: c.yearlyJob("team-b-report", map[string]string{"team": "b"})})
	wantCode(t, "CreateJob outside the scope", err, codes.PermissionDenied)

	// Nothing refused changed anything; every write names its author.
	resp, err := jobs.GetJob(callCtx(t, c.mgmt), get)
	if err != nil {
		t.Fatal(err)
	}
	if j := resp.GetJob(); j.GetVersion() != 1 || j.GetSpec().GetPaused() || j.GetUpdatedBy() != "bootstrap" {
		t.Errorf("job %s after the refused calls: version %d, paused %v, updated_by %q; want 1, false, bootstrap",
			secureJob, j.GetVersion(), j.GetSpec().GetPaused(), j.GetUpdatedBy())
	}
	_, err = jobs.GetJob(callCtx(t, c.mgmt), &pb.GetJobRequest{Name: "team-b-report"})
	wantCode(t, "GetJob of the job created outside the scope", err, codes.NotFound)
	resp, err = jobs.GetJob(callCtx(t, c.mgmt), &pb.GetJobRequest{Name: mine.GetName()})
	if err != nil || resp.GetJob().GetUpdatedBy() != "team-a" {
		t.Errorf("job %s: updated_by %q, err %v; want team-a", mine.GetName(), resp.GetJob().GetUpdatedBy(), err)
	}
}

// yearlyJob is a job that will not fire during the test.
func (c *secureCluster) yearlyJob(name string, labels map[string]string) *pb.JobSpec {
	return &pb.JobSpec{Name: name, Schedule: "0 0 1 1 *", Labels: labels, Http: &pb.HttpTarget{Url: c.sink.url}}
}

// checkGrpcurl: a stock gRPC tool works over TLS with the bearer header
// (reflection and calls alike), and without it is refused.
func (c *secureCluster) checkGrpcurl() {
	t := c.t
	bin, err := grpcurlPath()
	if err != nil {
		testutil.SkipStepOrFail(t, "the grpcurl step: %v", err)
		return
	}
	grpcurl := func(token string, args ...string) (string, error) {
		base := []string{"-max-time", "10", "-cacert", c.caCert()}
		if token != "" {
			base = append(base, "-H", "authorization: Bearer "+token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*secureCallTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append(base, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := grpcurl(c.mgmt, c.addr(0), "list")
	if err != nil || !strings.Contains(out, "raftcron.v1.JobService") {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	out, err = grpcurl(c.mgmt, "-d", fmt.Sprintf(`{"name": %q}`, secureJob), c.addr(0), "raftcron.v1.JobService/GetJob")
	var got struct {
		Job struct{ Spec struct{ Name string } }
	}
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Job.Spec.Name != secureJob {
		t.Fatalf("grpcurl GetJob %s: %v\n%s", secureJob, err, out)
	}
	if out, err := grpcurl("", c.addr(0), "list"); err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("grpcurl list without a token: %v\n%s; want Unauthenticated", err, out)
	}
}

// checkExecRefused: exec is off unless --exec-allow says otherwise, even
// for a management token.
func (c *secureCluster) checkExecRefused() {
	t := c.t
	jobs := pb.NewJobServiceClient(c.conn)
	spec := &pb.JobSpec{Name: "shell", Schedule: "@every 1s",
		Exec: &pb.ExecTarget{Command: []string{"/bin/sh", "-c", "id"}}}
	_, err := jobs.ApplyJob(callCtx(t, c.mgmt), &pb.ApplyJobRequest{Spec: spec})
	st := wantCode(t, "ApplyJob of an exec job", err, codes.PermissionDenied)
	if !strings.Contains(st.Message(), "--exec-allow") {
		t.Errorf("exec refusal %q: want it to name --exec-allow", st.Message())
	}
	_, err = jobs.GetJob(callCtx(t, c.mgmt), &pb.GetJobRequest{Name: spec.GetName()})
	wantCode(t, "GetJob of the refused exec job", err, codes.NotFound)
}

// checkCertReload: new node certificates from the same CA, written over
// the old files, are served after SIGHUP without a restart, and the job
// fires on.
func (c *secureCluster) checkCertReload() {
	t := c.t
	before, _ := c.sink.rising()
	fresh := filepath.Join(c.dir, "certs-new")
	for i := range secureNodes {
		id := fmt.Sprintf("n%d", i+1)
		c.tool("tls", "cert", "create", "--dir", fresh, "--ca", c.caCert(), "--ca-key", filepath.Join(c.certs, "ca-key.pem"),
			"--node", id, "--addr", "127.0.0.1")
		want := certSerial(t, filepath.Join(fresh, "node-"+id+".pem"))
		if certSerial(t, c.nodeCert(id)).Cmp(want) == 0 {
			t.Fatalf("%s: the new certificate has the old serial", id)
		}
		for _, f := range [][2]string{{"node-" + id + "-key.pem", c.nodeKey(id)}, {"node-" + id + ".pem", c.nodeCert(id)}} {
			if err := os.Rename(filepath.Join(fresh, f[0]), f[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.lc.Nodes()[i].Signal(syscall.SIGHUP); err != nil {
			t.Fatalf("SIGHUP %s: %v", id, err)
		}
		testutil.WaitFor(t, secureCallTimeout, id+" serving its new certificate", func() bool {
			serial, err := c.servingSerial(c.addr(i))
			return err == nil && serial.Cmp(want) == 0
		})
	}
	c.sink.waitRising(t, before, 3, "3 more runs with rising tokens after the reload")
}

// startIntruder starts a fourth node whose certificate another CA signed.
// It trusts the cluster's CA as well: all it lacks is a certificate the
// cluster's CA signed.
func (c *secureCluster) startIntruder() *intruder {
	foreign := filepath.Join(c.dir, "foreign")
	c.tool("tls", "ca", "create", "--dir", foreign)
	c.tool("tls", "cert", "create", "--dir", foreign, "--node", "n4", "--addr", "127.0.0.1")
	trust := filepath.Join(foreign, "trust.pem")
	var bundle []byte
	for _, f := range []string{filepath.Join(foreign, "ca.pem"), c.caCert()} {
		b, err := os.ReadFile(f)
		if err != nil {
			c.t.Fatal(err)
		}
		bundle = append(bundle, b...)
	}
	if err := os.WriteFile(trust, bundle, 0o644); err != nil {
		c.t.Fatal(err)
	}
	// The cluster's TLS directory holds no n4 certificate: n4's TLS flags
	// are its own.
	n4, err := c.lc.Add("n4", []string{c.addr(0)},
		"--tls-cert", filepath.Join(foreign, "node-n4.pem"), "--tls-key", filepath.Join(foreign, "node-n4-key.pem"), "--tls-ca", trust)
	if err != nil {
		c.t.Fatal(err)
	}
	return &intruder{node: n4, started: time.Now()}
}

// intruder is the foreign node and when it started.
type intruder struct {
	node    *localcluster.Node
	started time.Time
}

// checkIntruderKeptOut: the foreign node's join fails on its certificate
// and it gives up; no node ever counts it as a member, and it never
// campaigned or led.
func (c *secureCluster) checkIntruderKeptOut(n4 *intruder) {
	t := c.t
	code, err := n4.node.WaitExit(intruderTimeout - time.Since(n4.started))
	if err != nil {
		t.Fatalf("n4 (another CA's certificate) still runs after %s: its join should have failed", intruderTimeout)
	}
	logs, _ := os.ReadFile(n4.node.LogPath)
	if code == 0 {
		t.Errorf("n4 exited 0, want a failure\n%s", logs)
	}
	// TLS 1.3 sends the refusal of a client certificate after the client
	// finished its handshake, so some attempts only see the connection
	// close (a broken pipe); the others read the alert.
	refusal := firstLine(string(logs), "join attempt failed", "unknown certificate authority")
	if refusal == "" {
		t.Errorf("n4's log does not say its join failed on its certificate:\n%s", logs)
	}
	t.Logf("n4 kept out: %s", refusal)
	for _, state := range []string{"entering candidate state", "entering leader state"} {
		if strings.Contains(string(logs), state) {
			t.Errorf("n4's log says %q: it must never campaign or lead", state)
		}
	}
	want := []string{"n1", "n2", "n3"}
	var st struct {
		Servers []struct{ ID, Suffrage string }
	}
	c.cliJSON(c.mgmt, &st, "cluster", "status")
	if got := voters(st.Servers); !slices.Equal(got, want) {
		t.Errorf("cluster status lists voters %v (servers %+v), want %v", got, st.Servers, want)
	}
	for i := range secureNodes {
		resp, err := c.opsClient(2 * time.Second).Get("https://" + c.httpAddr(i) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := voters(st.Servers); !slices.Equal(got, want) || len(st.Servers) != len(want) {
			t.Errorf("n%d's configuration: %+v, want the voters %v only", i+1, st.Servers, want)
		}
	}
}

// voters are the IDs of the voters among servers, sorted.
func voters(servers []struct{ ID, Suffrage string }) []string {
	var ids []string
	for _, s := range servers {
		if s.Suffrage == "voter" {
			ids = append(ids, s.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// firstLine is the first line of text containing every one of parts, ""
// if none.
func firstLine(text string, parts ...string) string {
	for _, line := range strings.Split(text, "\n") {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			return line
		}
	}
	return ""
}

// wantCode fails the test unless err is a gRPC status with code want.
func wantCode(t *testing.T, what string, err error, want codes.Code) *status.Status {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != want {
		t.Fatalf("%s: %v, want %s", what, err, want)
	}
	return st
}

// randomSecret looks like a token secret or a signature, and is neither.
func randomSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
