package server

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// clientSteps are the lines the generated client's script prints when a
// step went as it should.
var clientSteps = []string{
	"ok: list before: no job yet",
	"ok: create: the spec comes back in the job file's form",
	"ok: list by label: the job",
	"ok: trigger: a manual run with its fencing token",
	"ok: delete",
	"ok: get after delete: 404 with a NOT_FOUND Status",
	"ok: without a token: 401 with an UNAUTHENTICATED Status",
}

// A TypeScript client generated from the node's own /v1/openapi.json by
// real generators (openapi-typescript, openapi-fetch), with no edit, lists,
// creates, triggers and deletes a job on a real node with ACLs on, with a
// bearer token; tsc checks the script against the generated types first.
func TestAGeneratedTypeScriptClientDrivesANode(t *testing.T) {
	tools := openapiTools(t)
	s := startCluster(t, 1, func(c *Config) { c.ACL = true })[0]
	leaderOf(t, []*Server{s})
	token := bootstrapToken(t, s)

	dir := t.TempDir()
	for _, f := range []string{"main.ts", "tsconfig.json"} {
		copyFile(t, filepath.Join("testdata", "openapi-client", f), filepath.Join(dir, f))
	}
	writeFile(t, filepath.Join(dir, "package.json"), `{"type": "module"}`)
	if err := os.Symlink(tools, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "openapi.json"), served(t, s, "/v1/openapi.json"))

	bin := filepath.Join(tools, ".bin")
	npx(t, dir, nil, filepath.Join(bin, "openapi-typescript"), "openapi.json", "--output", "api.d.ts")
	npx(t, dir, nil, filepath.Join(bin, "tsc"), "--project", "tsconfig.json")
	out := npx(t, dir, []string{"RAFTCRON_URL=" + opsURL(s, ""), "RAFTCRON_TOKEN=" + token}, "node", filepath.Join("out", "main.js"))
	t.Logf("the client's script:\n%s", out)
	for _, step := range clientSteps {
		if !strings.Contains(out, step+"\n") {
			t.Errorf("the client's script did not print %q:\n%s", step, out)
		}
	}
}

// openapiTools is the node_modules `make openapi-tools` installs, with node
// on PATH; without them the test skips, and fails under CI.
func openapiTools(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testutil.SkipOrFail(t, "node is not on PATH (Debian: apt-get install nodejs npm)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "bin", "tools", "openapi", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"openapi-typescript", "tsc"} {
		if _, err := os.Stat(filepath.Join(dir, ".bin", tool)); err != nil {
			testutil.SkipOrFail(t, "%s is not installed under bin/tools/openapi: run make openapi-tools", tool)
		}
	}
	return dir
}

// npx runs a program of the client's toolchain in dir and returns what it
// printed; it fails the test if the program fails or outlives a minute.
func npx(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func bootstrapToken(t *testing.T, s *Server) string {
	t.Helper()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	boot, err := pb.NewAclServiceClient(conn).BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	if err != nil {
		t.Fatalf("BootstrapAcl: %v", err)
	}
	return boot.GetSecret()
}

// served is the body of a GET of path on s's HTTP port.
func served(t *testing.T, s *Server, path string) string {
	t.Helper()
	resp, err := opsClient(s).Get(opsURL(s, path))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return string(b)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
