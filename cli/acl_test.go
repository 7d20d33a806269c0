package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

const hrJob = `name: payroll
schedule: "0 2 * * *"
http: {url: http://payroll.internal/run}
labels: {team: hr}
`

const billingJob = `name: invoices
schedule: "0 3 * * *"
http: {url: http://billing.internal/run}
labels: {team: billing}
`

// TestCLIACL runs one node with --acl: bootstrap once, tokens created,
// listed and deleted, and each kind of refusal as the CLI reports it.
func TestCLIACL(t *testing.T) {
	c := startCluster(t, 1, "--acl")
	node := c.Nodes()[0]
	cli := func(args ...string) cliResult { return cliOn(t, node, "", args...) }

	expectFailure(t, cli("job", "list"), "not authenticated", "RAFTCRON_TOKEN")

	var boot tokenView
	r := expectOK(t, cli("acl", "bootstrap", "-o", "json"))
	if err := json.Unmarshal([]byte(r.Stdout), &boot); err != nil {
		t.Fatalf("bootstrap -o json: %v\n%s", err, r.Stdout)
	}
	if boot.Secret == "" || boot.Role != "management" || boot.AccessorID == "" {
		t.Fatalf("bootstrap token %+v: want a management token with its secret", boot)
	}
	expectFailure(t, cli("acl", "bootstrap"), "bootstrapped already")
	mgmt := "--token=" + boot.Secret

	// A scoped write token, by the table output: the secret is on stdout,
	// the warning to keep it on stderr.
	tr := cli("acl", "token", "create", "--name", "billing-ci", "--role", "write", "--selector", "team=billing", mgmt)
	if tr.Code != ExitOK || !strings.Contains(tr.Stderr, "not shown again") {
		t.Fatalf("token create: %s", tr)
	}
	secret := tableValue(t, tr.Stdout, "secret:")
	accessor := tableValue(t, tr.Stdout, "accessor_id:")
	if sel := tableValue(t, tr.Stdout, "selector:"); sel != "team=billing" {
		t.Fatalf("selector %q", sel)
	}
	var read tokenView
	r = expectOK(t, cli("acl", "token", "create", "--name", "viewer", "--role", "read", "-o", "json", mgmt))
	if err := json.Unmarshal([]byte(r.Stdout), &read); err != nil || read.Secret == "" {
		t.Fatalf("token create -o json: %v\n%s", err, r.Stdout)
	}
	expectFailure(t, cli("acl", "token", "create", "--name", "viewer", "--role", "read", mgmt), "already exists")
	if r := cli("acl", "token", "create", "--name", "x", "--role", "admin", mgmt); r.Code != ExitUsage {
		t.Fatalf("unknown role: want a usage error, got %s", r)
	}

	var list []map[string]any
	r = expectOK(t, cli("acl", "token", "list", "-o", "json", mgmt))
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("token list -o json: %v\n%s", err, r.Stdout)
	}
	var names []string
	for _, tok := range list {
		names = append(names, tok["name"].(string))
		if _, leaked := tok["secret"]; leaked {
			t.Fatalf("token list shows a secret: %s", r.Stdout)
		}
	}
	if strings.Join(names, ",") != "billing-ci,bootstrap,viewer" {
		t.Fatalf("token list names %v", names)
	}

	// The environment carries the token as well as the flag.
	env := []string{"RAFTCRON_TOKEN=" + secret}
	hr, billing := testutil.WriteFile(t, "hr.yaml", hrJob), testutil.WriteFile(t, "billing.yaml", billingJob)
	expectOK(t, cli("job", "apply", "-f", hr, mgmt))
	expectFailure(t, runCLIEnv(t, env, "", "job", "apply", "-f", hr, "--addr", node.Addr), "permission denied", "team=billing")
	expectOK(t, runCLIEnv(t, env, "", "job", "apply", "-f", billing, "--addr", node.Addr))
	expectFailure(t, cli("job", "get", "payroll", "--token", secret), "not found")
	var st jobStatusView
	r = expectOK(t, cli("job", "status", "invoices", "-o", "json", "--token", read.Secret))
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.UpdatedBy != "billing-ci" {
		t.Fatalf("job status: updated_by %q, %v; want billing-ci\n%s", st.UpdatedBy, err, r.Stdout)
	}
	expectFailure(t, cli("job", "delete", "invoices", "--token", read.Secret), "permission denied", "role write")
	expectFailure(t, cli("job", "list", "--token", "nonsense"), "not authenticated", "unknown or expired ACL token")

	r = expectOK(t, cli("acl", "token", "delete", accessor, mgmt))
	if r.Stdout != "ACL token "+accessor+" deleted\n" {
		t.Fatalf("token delete: %q", r.Stdout)
	}
	expectFailure(t, runCLIEnv(t, env, "", "job", "list", "--addr", node.Addr), "unknown or expired ACL token")
	expectFailure(t, cli("acl", "token", "delete", boot.AccessorID, mgmt), "last management token")

	// A worker takes attempts of its token's pool with a token of role
	// worker, read from a file, and no other pool's.
	expectUsage(t, cli("acl", "token", "create", "--name", "w1", "--role", "worker", mgmt), "--pool: required")
	expectUsage(t, cli("acl", "token", "create", "--name", "r2", "--role", "read", "--pool", "batch", mgmt), "--pool: only worker tokens")
	var wt tokenView
	r = expectOK(t, cli("acl", "token", "create", "--name", "w1", "--role", "worker", "--pool", "batch",
		"--max-concurrency", "4", "--ttl", "1h", "-o", "json", mgmt))
	if err := json.Unmarshal([]byte(r.Stdout), &wt); err != nil || wt.Secret == "" || strings.Join(wt.Pools, ",") != "batch" ||
		wt.MaxConcurrency != 4 || wt.ExpiresAt == "" {
		t.Fatalf("worker token create -o json: %v\n%s", err, r.Stdout)
	}
	workerToken := testutil.WriteFile(t, "worker.token", wt.Secret+"\n")
	r = runCLI(t, "", "worker", "--id", "w2", "--pool", "payments", "--addr", node.Addr, "--token-file", workerToken)
	if r.Code != ExitFailure || !strings.Contains(r.Stderr, `PermissionDenied desc = hello.pool: this worker's ACL token may serve the pools batch, not "payments"`) {
		t.Fatalf("a worker of another pool than its token's: want it refused, got %s", r)
	}
	startWorker(t, "--id", "w1", "--pool", "batch", "--tags", "region=eu", "--exec-allow", "/bin/sh",
		"--addr", node.Addr, "--token-file", workerToken)
	mgmtFile := testutil.WriteFile(t, "mgmt.token", boot.Secret)
	asMgmt := []string{"RAFTCRON_TOKEN_FILE=" + mgmtFile}
	expectOK(t, runCLIEnv(t, asMgmt, "", "job", "apply", "-f", testutil.WriteFile(t, "report.yaml", workerJob), "--addr", node.Addr))
	expectOK(t, cli("job", "trigger", "report", "--token-file", mgmtFile))
	testutil.WaitFor(t, 30*time.Second, "the run to succeed on the worker", func() bool {
		var runs []runView
		r := cli("run", "list", "--job", "report", "-o", "json", mgmt)
		return r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &runs) == nil && len(runs) > 0 && runs[0].State == "succeeded"
	})
	expectUsage(t, cli("job", "list", "--token-file", mgmtFile, mgmt), "--token and --token-file")
}

// expectUsage fails the test unless the command was refused as a usage
// error saying want.
func expectUsage(t *testing.T, r cliResult, want string) {
	t.Helper()
	if r.Code != ExitUsage || !strings.Contains(r.Stderr, want) {
		t.Fatalf("want a usage error saying %q, got %s", want, r)
	}
}

// tableValue is the value after key in the key/value table of a created
// token.
func tableValue(t *testing.T, out, key string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no %q in %q", key, out)
	return ""
}
