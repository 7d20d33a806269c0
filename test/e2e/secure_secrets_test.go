//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// checkSecrets: a secret put through the CLI reaches the downstream in the
// header that references it, and its value is nowhere else: not in any
// node's data dir (Raft log, stable store, snapshots), the nodes' logs, a
// saved snapshot, /metrics, the runs, or what the JSON API and the UI
// answer (finding 6). Literal values in a header, a body, a URL's
// password, an exec or worker env are hidden from read tokens and the
// audit trail, and given back to the management token that wrote them.
func (c *secureCluster) checkSecrets() {
	t := c.t
	value := "s3cret-" + randomSecret(t)
	literals := c.putLiteralJobs()
	literal := "literal-" + randomSecret(t)
	literals["http.headers"] = literal
	var mu sync.Mutex
	var seen []string
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer downstream.Close()

	valueFile := filepath.Join(c.dir, "secret-value")
	if err := os.WriteFile(valueFile, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli(c.mgmt, "secret", "put", "hook-token", "--from-file", valueFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(valueFile); err != nil {
		t.Fatal(err)
	}
	const name, failing = "with-secret", "secret-in-a-failing-url"
	c.applyJob(name, "name: "+name+"\nschedule: \"@every 1s\"\nhttp:\n  url: "+downstream.URL+"/hook\n"+
		"  headers: {Authorization: \"Bearer ${secret:hook-token}\", X-Literal: \""+literal+"\"}\n")
	c.applyJob(failing, "name: "+failing+"\nschedule: \"@every 1s\"\nhttp: {url: \"http://127.0.0.1:1/?key=${secret:hook-token}\"}\n")
	testutil.WaitFor(t, secureRunsTimeout, "the downstream given the secret", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, got := range seen {
			if got == "Bearer "+value {
				return true
			}
		}
		return false
	})
	testutil.WaitFor(t, secureRunsTimeout, "a failed run of "+failing, func() bool {
		out, err := c.cli(c.mgmt, "run", "list", "--job", failing, "-o", "json")
		return err == nil && strings.Contains(out, `"failed"`)
	})

	reader := c.createToken("secrets-reader", "read")
	jobs := pb.NewJobServiceClient(c.conn)
	for _, tok := range []string{reader, c.mgmt} {
		resp, err := jobs.GetJob(callCtx(t, tok), &pb.GetJobRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		h := resp.GetJob().GetSpec().GetHttp().GetHeaders()
		wantLiteral := literal
		if tok == reader {
			wantLiteral = "<redacted>"
		}
		if h["Authorization"] != "Bearer ${secret:hook-token}" || h["X-Literal"] != wantLiteral {
			t.Errorf("GetJob headers %v (read token %v): want the reference as written and X-Literal %q", h, tok == reader, wantLiteral)
		}
	}

	// What a reader sees, and everything the cluster keeps or tells.
	answers := map[string][]byte{}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/" + name, "/v1/jobs/" + failing, "/v1/runs?job=" + failing, "/ui/"} {
		answers["read token GET "+path] = c.httpBody(c.httpAddr(0), path, reader)
	}
	mgmtJobs := c.httpBody(c.httpAddr(0), "/v1/jobs", c.mgmt)
	for field, lit := range literals {
		if !bytes.Contains(mgmtJobs, []byte(lit)) {
			t.Errorf("management GET /v1/jobs lacks the literal %s value: it must round-trip", field)
		}
	}
	answers["management GET /v1/audit"] = c.httpBody(c.httpAddr(0), "/v1/audit?limit=1000", c.mgmt)
	answers["management GET /v1/runs"] = c.httpBody(c.httpAddr(0), "/v1/runs?job="+failing, c.mgmt)
	out, err := c.cli(c.mgmt, "audit", "list", "--limit", "1000", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	answers["audit list"] = []byte(out)
	out, err = c.cli(c.mgmt, "secret", "list", "-o", "json")
	if err != nil || !strings.Contains(out, "hook-token") {
		t.Fatalf("secret list: %v\n%s", err, out)
	}
	answers["secret list"] = []byte(out)
	saved := filepath.Join(c.dir, "secrets.snap")
	if _, err := c.cli(c.mgmt, "snapshot", "save", saved); err != nil {
		t.Fatal(err)
	}
	for i, n := range c.lc.Nodes()[:secureNodes] {
		answers[n.ID+" /metrics"] = c.httpBody(c.httpAddr(i), "/metrics", "")
	}
	for what, body := range answers {
		if bytes.Contains(body, []byte(value)) {
			t.Errorf("%s holds the secret's value", what)
		}
		if !strings.HasPrefix(what, "read token") && !strings.Contains(what, "audit") {
			continue
		}
		for field, lit := range literals {
			if bytes.Contains(body, []byte(lit)) {
				t.Errorf("%s holds the literal %s value", what, field)
			}
		}
	}
	files := []string{saved}
	for _, n := range c.lc.Nodes()[:secureNodes] {
		files = append(files, n.LogPath)
		_ = filepath.WalkDir(n.DataDir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return err
		})
	}
	for _, f := range files {
		if containsFile(t, f, value) {
			t.Errorf("%s holds the secret's value in clear", f)
		}
	}
	t.Logf("secret checked absent from %d files and %d answers", len(files), len(answers))
	for _, job := range []string{name, failing, "literal-http", "literal-exec", "literal-worker"} {
		if _, err := c.cli(c.mgmt, "job", "delete", job); err != nil {
			t.Fatal(err)
		}
	}
}

// putLiteralJobs registers jobs (that never fire) whose header-like fields
// hold credentials written out, and changes one of them, so that the audit
// trail records a change of such a value. It returns the values by field.
func (c *secureCluster) putLiteralJobs() map[string]string {
	lit := func(what string) string { return what + "-" + randomSecret(c.t) }
	literals := map[string]string{"http.body": lit("body"), "http.url password": lit("password"),
		"exec.env": lit("exec-env"), "worker.env": lit("worker-env")}
	yearly, sh := "0 0 1 1 *", []string{"/bin/sh", "-c", "date"}
	for _, spec := range []*pb.JobSpec{
		{Name: "literal-http", Schedule: yearly, Http: &pb.HttpTarget{Url: "http://svc:" + literals["http.url password"] + "@127.0.0.1:1/hook",
			Body: lit("old-body")}},
		{Name: "literal-http", Schedule: yearly, Http: &pb.HttpTarget{Url: "http://svc:" + literals["http.url password"] + "@127.0.0.1:1/hook",
			Body: literals["http.body"]}},
		{Name: "literal-exec", Schedule: yearly, Exec: &pb.ExecTarget{Command: sh, Env: map[string]string{"API_KEY": literals["exec.env"]}}},
		{Name: "literal-worker", Schedule: yearly, Worker: &pb.WorkerTarget{Pool: "batch", Command: sh,
			Env: map[string]string{"API_KEY": literals["worker.env"]}}},
	} {
		c.putJob(spec)
	}
	return literals
}

// httpBody is the body of a GET on a node's HTTP port with token as the
// bearer (none if empty); any status.
func (c *secureCluster) httpBody(addr, path, token string) []byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), secureCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.opsClient(secureCallTimeout).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: HTTP %d\n%s", path, resp.StatusCode, body)
	}
	return body
}

// containsFile reports whether the file at path holds s. A file that
// vanished meanwhile (a snapshot replaced) holds nothing.
func containsFile(t interface{ Fatal(...any) }, path, s string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return false
		}
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(s))
}
