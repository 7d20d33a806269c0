package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/knadh/koanf/v2"

	"github.com/raftcron/raftcron/fence"
)

const testFenceKey = "test-fence-key-test-fence-key-test-fence-key="

func TestServePolicyFlags(t *testing.T) {
	cfg, err := loadForTest(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy
	if p.Exec.Enabled() || p.ExecUser != nil || p.FenceKeys != nil || p.HTTPDeny.String() != "169.254.0.0/16,fe80::/10" {
		t.Fatalf("defaults: exec %v, user %v, keys %v, http-deny %q; want exec off, no user, unsigned, link-local denied",
			p.Exec.Enabled(), p.ExecUser, p.FenceKeys != nil, p.HTTPDeny.String())
	}
	keyFile := writeFile(t, "fence.key", testFenceKey+"\n")
	cfg, err = loadForTest(t, append(minimal, "--exec-allow", "/usr/local/bin/*,/opt/jobs/report",
		"--http-deny", "", "--fence-key-file", keyFile)...)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Policy; !p.Exec.Enabled() || p.Exec.Allow("/opt/jobs/report") != nil || p.HTTPDeny.String() != "" || p.FenceKeys == nil {
		t.Fatalf("set: %+v", p)
	}

	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"relative pattern":  {[]string{"--exec-allow", "bin/*"}, `--exec-allow: pattern "bin/*": must be an absolute`},
		"bad range":         {[]string{"--http-deny", "10.0.0.0/33"}, `--http-deny: "10.0.0.0/33" is not a CIDR range`},
		"missing key file":  {[]string{"--fence-key-file", "/nonexistent/fence.key"}, "--fence-key-file: fence: open /nonexistent/fence.key"},
		"short key":         {[]string{"--fence-key-file", writeFile(t, "short.key", "short\n")}, "want at least 32"},
		"unknown exec user": {[]string{"--exec-user", "raftcron-no-such-user"}, "--exec-user: "},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadForTest(t, append(minimal, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
}

func TestServeExecUserNeedsRoot(t *testing.T) {
	k := koanf.New(".")
	if err := k.Set(flagExecUser, "nobody"); err != nil {
		t.Fatal(err)
	}
	_, err := parsePolicyConfig(k, 1000)
	if err == nil || !strings.Contains(err.Error(), "--exec-user: the node runs as uid 1000, not root") {
		t.Fatalf("as uid 1000: %v, want --exec-user refused", err)
	}
	if _, err := parsePolicyConfig(k, 0); err != nil {
		t.Skipf("no user nobody here to switch to: %v", err)
	}
}

// fencedDownstream is a service behind fence.Middleware that verifies signatures.
func fencedDownstream(t *testing.T, keys *fence.Keys) (url string, applied *atomic.Int64) {
	applied = &atomic.Int64{}
	f := fence.NewFence(fence.NewMemoryGuard(), nil)
	h := fence.Middleware(f, fence.WithKeys(keys), fence.WithV1Signatures())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		applied.Add(1)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, applied
}

// jobRuns is `run list --job` as JSON.
func jobRuns(t *testing.T, c *testCluster, job string) []runView {
	t.Helper()
	r := expectOK(t, c.cli(t, c.Nodes[0], "", "run", "list", "--job", job, "-o", "json"))
	var runs []runView
	if err := json.Unmarshal([]byte(r.Stdout), &runs); err != nil {
		t.Fatalf("run list: %v: %q", err, r.Stdout)
	}
	return runs
}

// waitRefused waits for a run of job that failed with reason after one attempt.
func waitRefused(t *testing.T, c *testCluster, job, reason string) {
	t.Helper()
	waitFor(t, readyTimeout, "a run of "+job+" failed "+reason, func() bool {
		return slices.ContainsFunc(jobRuns(t, c, job), func(r runView) bool {
			return r.State == "failed" && r.Reason == reason && len(r.Attempts) == 1
		})
	})
}

// TestCLIDispatchPolicy runs one node through the policy of DESIGN §11: exec jobs
// refused at registration and, once the node's list changes, at dispatch; a webhook to
// the cloud metadata address refused on egress; signed webhooks accepted by fence.
func TestCLIDispatchPolicy(t *testing.T) {
	keys, err := fence.ParseKeys([]byte(testFenceKey))
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 1, "--exec-allow", "/bin/*", "--fence-key-file", writeFile(t, "fence.key", testFenceKey+"\n"))
	n := c.Nodes[0]
	downstream, applied := fencedDownstream(t, keys)
	job := func(name, target string) string {
		return fmt.Sprintf("name: %s\nschedule: \"@every 1s\"\n%s\nretry: {max_attempts: 3, initial_backoff: 1s}\n", name, target)
	}

	t.Run("exec outside --exec-allow refused at registration", func(t *testing.T) {
		before := listJSON(t, c, n)
		expectFailure(t, c.cli(t, n, job("sbin", "exec: {command: [/usr/sbin/nologin]}"), "job", "apply", "-f", "-"),
			"exec.command[0]", "--exec-allow (/bin/*)", "permission denied")
		if after := listJSON(t, c, n); after != before {
			t.Fatalf("the registry changed:\nbefore %s\nafter %s", before, after)
		}
	})
	expectOK(t, c.cli(t, n, job("tightened", "exec: {command: [/bin/true]}"), "job", "apply", "-f", "-"))
	expectOK(t, c.cli(t, n, job("metadata", "http: {url: http://169.254.169.254/raftcron-egress-test}"), "job", "apply", "-f", "-"))
	expectOK(t, c.cli(t, n, job("signed", "http: {url: "+downstream+"}"), "job", "apply", "-f", "-"))

	t.Run("webhook to the metadata address refused on egress", func(t *testing.T) {
		waitRefused(t, c, "metadata", "egress_denied")
	})
	t.Run("signed webhooks pass the fence", func(t *testing.T) {
		waitFor(t, readyTimeout, "a signed run applied downstream", func() bool { return applied.Load() > 0 })
		for _, r := range jobRuns(t, c, "signed") {
			if r.State != "succeeded" && r.State != "dispatched" {
				t.Fatalf("run %s is %s (%s): the fence refused it", r.ID, r.State, r.Attempts[len(r.Attempts)-1].Detail)
			}
		}
	})
	t.Run("exec refused at dispatch once the node no longer allows it", func(t *testing.T) {
		n.signal(t, syscall.SIGTERM)
		if code := n.waitExit(t, exitTimeout); code != 0 {
			t.Fatalf("exit %d", code)
		}
		i := slices.Index(n.args, "/bin/*")
		n.args[i] = "/usr/local/bin/*"
		n.start(t, binary(t))
		c.waitReady(t)
		waitRefused(t, c, "tightened", "exec_denied")
	})
}
