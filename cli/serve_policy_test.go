package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

const testFenceKey = "test-fence-key-test-fence-key-test-fence-key="

// fencedDownstream is a service behind fence.Middleware that verifies v2 signatures.
func fencedDownstream(t *testing.T, keys *fence.Keys) (url string, applied *atomic.Int64) {
	applied = &atomic.Int64{}
	f := fence.NewFence(fence.NewMemoryGuard(), nil)
	h := fence.Middleware(f, fence.WithKeys(keys))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		applied.Add(1)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, applied
}

// jobRuns is `run list --job` as JSON.
func jobRuns(t *testing.T, c *localcluster.Cluster, job string) []runView {
	t.Helper()
	r := expectOK(t, cliOn(t, c.Nodes()[0], "", "run", "list", "--job", job, "-o", "json"))
	var runs []runView
	if err := json.Unmarshal([]byte(r.Stdout), &runs); err != nil {
		t.Fatalf("run list: %v: %q", err, r.Stdout)
	}
	return runs
}

// waitRefused waits for a run of job that failed with reason after one attempt.
func waitRefused(t *testing.T, c *localcluster.Cluster, job, reason string) {
	t.Helper()
	testutil.WaitFor(t, clustertest.ReadyTimeout, "a run of "+job+" failed "+reason, func() bool {
		return slices.ContainsFunc(jobRuns(t, c, job), func(r runView) bool {
			return r.State == "failed" && r.Reason == reason && len(r.Attempts) == 1
		})
	})
}

// TestCLIDispatchPolicy runs one node through the policy of DESIGN §11: exec jobs
// refused at registration and, once the node's list changes, at dispatch; a job env that
// would make its shell run code refused at registration; a webhook to the cloud metadata
// address refused on egress; webhooks signed v2 accepted by a fence that takes v2 only.
func TestCLIDispatchPolicy(t *testing.T) {
	keys, err := fence.ParseKeys([]byte(testFenceKey))
	if err != nil {
		t.Fatal(err)
	}
	allow := "/bin/*" // --exec-allow, which the last step narrows
	c := clustertest.Start(t, localcluster.Options{Nodes: 1,
		Args: append(slices.Clone(testRaft), "--fence-key-file", testutil.WriteFile(t, "fence.key", testFenceKey+"\n")),
		NodeArgs: func(*localcluster.Node) []string {
			return append([]string{"--exec-allow", allow}, testutil.ExecUserArgs()...)
		}})
	n := c.Nodes()[0]
	downstream, applied := fencedDownstream(t, keys)
	job := func(name, target string) string {
		return fmt.Sprintf("name: %s\nschedule: \"@every 1s\"\n%s\nretry: {max_attempts: 3, initial_backoff: 1s}\n", name, target)
	}

	t.Run("exec outside --exec-allow refused at registration", func(t *testing.T) {
		before := listJSON(t, c, n)
		expectFailure(t, cliOn(t, n, job("sbin", "exec: {command: [/usr/sbin/nologin]}"), "job", "apply", "-f", "-"),
			"exec.command[0]", "--exec-allow (/bin/*)", "permission denied")
		if after := listJSON(t, c, n); after != before {
			t.Fatalf("the registry changed:\nbefore %s\nafter %s", before, after)
		}
	})
	t.Run("exec env that makes the shell run code refused at registration", func(t *testing.T) {
		before := listJSON(t, c, n)
		expectFailure(t, cliOn(t, n, job("inject", `exec: {command: [/bin/sh, -c, date], env: {"BASH_FUNC_date%%": "() { id; }"}}`),
			"job", "apply", "-f", "-"), "exec.env", `"BASH_FUNC_date%%"`, "--exec-env-allow", "permission denied")
		if after := listJSON(t, c, n); after != before {
			t.Fatalf("the registry changed:\nbefore %s\nafter %s", before, after)
		}
	})
	expectOK(t, cliOn(t, n, job("tightened", "exec: {command: [/bin/true]}"), "job", "apply", "-f", "-"))
	expectOK(t, cliOn(t, n, job("metadata", "http: {url: http://169.254.169.254/raftcron-egress-test}"), "job", "apply", "-f", "-"))
	// The node signs v2, which the downstream alone accepts, once it raised the
	// cluster version, right after its election.
	testutil.WaitFor(t, clustertest.ReadyTimeout, "the cluster version of signature v2", func() bool {
		st, err := n.Status(context.Background())
		return err == nil && st.ClusterVersion >= fsm.SignaturesV2Version
	})
	expectOK(t, cliOn(t, n, job("signed", "http: {url: "+downstream+"}"), "job", "apply", "-f", "-"))

	t.Run("webhook to the metadata address refused on egress", func(t *testing.T) {
		waitRefused(t, c, "metadata", "egress_denied")
	})
	t.Run("signed webhooks pass the fence", func(t *testing.T) {
		testutil.WaitFor(t, clustertest.ReadyTimeout, "a signed run applied downstream", func() bool { return applied.Load() > 0 })
		for _, r := range jobRuns(t, c, "signed") {
			if r.State != "succeeded" && r.State != "dispatched" {
				t.Fatalf("run %s is %s (%s): the fence refused it", r.ID, r.State, r.Attempts[len(r.Attempts)-1].Detail)
			}
		}
	})
	t.Run("exec refused at dispatch once the node no longer allows it", func(t *testing.T) {
		if code := stopNode(t, n); code != 0 {
			t.Fatalf("exit %d", code)
		}
		allow = "/usr/local/bin/*"
		restartNode(t, c, n)
		clustertest.WaitReady(t, c)
		waitRefused(t, c, "tightened", "exec_denied")
	})
}
