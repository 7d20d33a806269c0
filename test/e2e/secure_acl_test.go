//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
)

// revocationBound is how soon a revoked token's open stream must end.
const revocationBound = time.Second

// checkACLBindings: with real processes, a second `acl bootstrap` is
// refused; a worker whose token is bound to another pool is refused and
// stops; a `run watch` whose token is deleted ends within a second. The
// secrets travel in files (--token-file), as an operator's should.
func (c *secureCluster) checkACLBindings() {
	t := c.t
	if out, err := c.cli("", "acl", "bootstrap"); err == nil || !strings.Contains(out, "bootstrapped already") {
		t.Fatalf("a second acl bootstrap: %v, want it refused as bootstrapped already", err)
	}

	batch := c.tokenFile("batch-worker", c.createToken("batch-worker", "worker", "--pool", "batch", "--max-concurrency", "2"))
	out, err := c.client(batch, time.Minute, "worker", "--id", "intruder", "--pool", "payments").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `PermissionDenied desc = hello.pool: this worker's ACL token may serve the pools batch, not "payments"`) {
		t.Fatalf("a worker of pool payments with a token of pool batch: %v, want it refused and stopped\n%s", err, out)
	}

	viewer := c.tokenFile("watcher", c.createToken("watcher", "read"))
	watch := c.client(viewer, time.Minute, "run", "watch")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	watch.Stderr = &stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() { // the job fires every second: a line means the watch is in place
		t.Fatalf("run watch printed nothing: %s", stderr.String())
	}
	go func() {
		for lines.Scan() {
		}
	}()
	ended := make(chan error, 1)
	go func() { ended <- watch.Wait() }()
	var tokens []struct {
		AccessorID string `json:"accessor_id"`
		Name       string
	}
	c.cliJSON(c.mgmt, &tokens, "acl", "token", "list")
	for _, tok := range tokens {
		if tok.Name == "watcher" {
			if _, err := c.cli(c.mgmt, "acl", "token", "delete", tok.AccessorID); err != nil {
				t.Fatal(err)
			}
		}
	}
	deleted := time.Now()
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(stderr.String(), "not authenticated: ACL token deleted") {
			t.Fatalf("run watch of the deleted token ended with %v, stderr %q; want it refused as unauthenticated", err, stderr.String())
		}
		t.Logf("run watch of the deleted token ended at most %s after `acl token delete` returned", time.Since(deleted).Round(time.Millisecond))
	case <-time.After(revocationBound):
		t.Fatalf("run watch of the deleted token still open %s after the deletion", revocationBound)
	}
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
