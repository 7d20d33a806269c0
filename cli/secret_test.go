package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLISecrets runs one node with a secrets key: values put three ways,
// listed without values, referenced by a job, and a referenced secret
// deleted only with --force.
func TestCLISecrets(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "secrets.key")
	if code, out, errOut := runInProcess(t, "secret", "keygen", "--out", key); code != ExitOK || !strings.Contains(out, "key ") {
		t.Fatalf("keygen: %d %s %s", code, out, errOut)
	}
	if info, err := os.Stat(key); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	if code, _, errOut := runInProcess(t, "secret", "keygen", "--out", key); code != ExitFailure || !strings.Contains(errOut, "exists") {
		t.Fatalf("keygen over an existing file: %d %s", code, errOut)
	}

	c := startCluster(t, 1, "--secrets-key-file", key)
	node := c.Nodes()[0]
	cli := func(stdin string, args ...string) cliResult { return cliOn(t, node, stdin, args...) }

	valueFile := filepath.Join(dir, "value")
	if err := os.WriteFile(valueFile, []byte("from-a-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectOK(t, cli("", "secret", "put", "db", "--from-literal", "hunter2"))
	expectOK(t, cli("t0k3n", "secret", "put", "api", "-", "--label", "team=billing"))
	expectOK(t, cli("", "secret", "put", "file", "--from-file", valueFile))
	r := expectOK(t, cli("", "secret", "put", "db", "--from-literal", "hunter3", "-o", "json"))
	var put secretView
	if err := json.Unmarshal([]byte(r.Stdout), &put); err != nil || put.Version != 2 || put.KeyID == "" {
		t.Fatalf("second put -o json: %+v, %v\n%s", put, err, r.Stdout)
	}
	for _, args := range [][]string{
		{"secret", "put", "x"},
		{"secret", "put", "x", "--from-literal", "a", "-"},
		{"secret", "put", "x", "value"},
	} {
		if r := cli("", args...); r.Code != ExitUsage {
			t.Errorf("%v: want a usage error, got %s", args, r)
		}
	}

	r = expectOK(t, cli("", "secret", "list", "-o", "json"))
	var list []secretView
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list) != 3 {
		t.Fatalf("secret list -o json: %v\n%s", err, r.Stdout)
	}
	for _, v := range []string{"hunter", "t0k3n", "from-a-file"} {
		if strings.Contains(r.Stdout, v) {
			t.Fatalf("secret list shows a value:\n%s", r.Stdout)
		}
	}
	if list[0].Name != "api" || list[0].Labels["team"] != "billing" || list[1].Name != "db" || list[1].Version != 2 {
		t.Fatalf("secret list: %+v", list)
	}

	job := filepath.Join(dir, "job.yaml")
	write := func(body string) {
		if err := os.WriteFile(job, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("name: invoices\nschedule: \"0 3 * * *\"\nlabels: {team: billing}\n" +
		"http: {url: http://billing.internal/run, headers: {Authorization: \"Bearer ${secret:nope}\"}}\n")
	expectFailure(t, cli("", "job", "apply", "-f", job), "http.headers.Authorization", `secret "nope" not found`)
	write("name: invoices\nschedule: \"0 3 * * *\"\nlabels: {team: billing}\n" +
		"http: {url: http://billing.internal/run, headers: {Authorization: \"Bearer ${secret:api}\"}}\n")
	expectOK(t, cli("", "job", "apply", "-f", job))

	expectFailure(t, cli("", "secret", "delete", "api"), "invoices", "--force")
	r = cli("", "secret", "delete", "api", "--force")
	if r.Code != ExitOK || !strings.Contains(r.Stderr, "invoices") || !strings.Contains(r.Stderr, "secret_missing") {
		t.Fatalf("forced delete: %s", r)
	}
	r = expectOK(t, cli("", "secret", "rotate"))
	if !strings.Contains(r.Stdout, "0 secrets re-encrypted") {
		t.Fatalf("rotate with one key: %s", r)
	}
}
