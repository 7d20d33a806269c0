//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// loopCluster is three `raftcron serve` processes as anyone starts them on
// one machine: on loopback, where serve needs neither TLS nor ACLs and
// runs without them (so does `dev --insecure`), with exec allowed and
// pprof on. Nothing from another host reaches it; a browser on this one
// does.
type loopCluster struct {
	t    *testing.T
	lc   *localcluster.Cluster
	conn *grpc.ClientConn // to n1, plaintext and without a token
	http *http.Client
}

func newLoopCluster(t *testing.T) *loopCluster {
	t.Helper()
	lc := launchReady(t, localcluster.Options{Binary: plainBinary.get(t), Dir: t.TempDir(), Debug: true,
		Args: append(execFlags(), raftFlags...)})
	conn, err := lc.Dial(lc.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &loopCluster{t: t, lc: lc, conn: conn, http: &http.Client{Timeout: secureCallTimeout}}
}

// checkReboundHost (finding 2): without ACLs, the Host check is all that
// keeps a rebound page from creating an exec job.
func (c *loopCluster) checkReboundHost() {
	checkReboundHost(c.t, c.http, "http://"+c.lc.Nodes()[1].HTTPAddr, "")
}

// checkEnvRefused (finding 1): a job whose env makes bash define a
// function, or the loader preload a library, is refused at registration,
// through the JSON API as through gRPC, exec and worker targets alike.
func (c *loopCluster) checkEnvRefused() {
	t := c.t
	const name = "env-injection"
	spec := fmt.Sprintf(`{"name": %q, "schedule": "0 0 1 1 *", "exec": {"command": ["/bin/sh", "-c", "date"], `+
		`"env": {"BASH_FUNC_date%%%%": "() { id; }"}}}`, name)
	req, err := http.NewRequest(http.MethodPut, "http://"+c.lc.Nodes()[0].HTTPAddr+"/v1/jobs/"+name, strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `BASH_FUNC_date%%`) {
		t.Errorf("PUT /v1/jobs/%s with env BASH_FUNC_date%%%%: HTTP %d %s, want 403 naming the variable", name, resp.StatusCode, body)
	}
	jobs := pb.NewJobServiceClient(c.conn)
	for field, spec := range map[string]*pb.JobSpec{
		"exec.env": {Name: name, Schedule: "0 0 1 1 *", Exec: &pb.ExecTarget{Command: []string{"/bin/sh", "-c", "date"},
			Env: execEnv}},
		"worker.env": {Name: name, Schedule: "0 0 1 1 *", Worker: &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/sh", "-c", "date"},
			Env: execEnv}},
	} {
		_, err := jobs.ApplyJob(callCtx(t, ""), &pb.ApplyJobRequest{Spec: spec})
		wantDenied(t, "ApplyJob with "+field+" LD_PRELOAD", err, `"LD_PRELOAD"`)
	}
}

// checkEgressDenied (finding 7): a loopback node keeps loopback reachable
// for its downstreams, but never its own ports, however the address is
// written: a webhook cannot read its pprof command line (and the flags in
// it) or its /status back.
func (c *loopCluster) checkEgressDenied() {
	t := c.t
	ctx, cancel := context.WithTimeout(context.Background(), leaderTimeout)
	defer cancel()
	leader, err := c.lc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, httpPort, _ := net.SplitHostPort(leader.HTTPAddr)
	_, grpcPort, _ := net.SplitHostPort(leader.Addr)
	checkEgressDenied(t, c.conn, "", map[string]string{
		"self-pprof":       "http://" + leader.DebugAddr + "/debug/pprof/cmdline",
		"self-ipv4-mapped": "http://[::ffff:127.0.0.1]:" + httpPort + "/status",
		"self-unspecified": "http://0.0.0.0:" + grpcPort + "/",
	})

	// What refuses those is the rule about the node's ports, not loopback.
	reached := make(chan struct{}, 1)
	downstream := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		select {
		case reached <- struct{}{}:
		default:
		}
	}))
	defer downstream.Close()
	jobs := pb.NewJobServiceClient(c.conn)
	const name = "loopback-downstream"
	spec := &pb.JobSpec{Name: name, Schedule: "@every 1s", Http: &pb.HttpTarget{Url: downstream.URL}}
	if _, err := jobs.ApplyJob(callCtx(t, ""), &pb.ApplyJobRequest{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(secureRunsTimeout):
		t.Fatalf("a webhook to a downstream on loopback (%s) never arrived", downstream.URL)
	}
	if _, err := jobs.DeleteJob(callCtx(t, ""), &pb.DeleteJobRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
}
