package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// recover refuses a running node's data dir, shows a stopped one with
// --dry-run, and rewrites it so that the node starts alone with its jobs.
func TestCLIRecoverASurvivor(t *testing.T) {
	c := startCluster(t, 3)
	leader := clustertest.Leader(t, c)
	expectOK(t, cliOn(t, leader, "", "job", "apply", "-f", testutil.WriteFile(t, "two.yaml", quietJobs)))
	survivor := c.Nodes()[0]
	alone := survivor.ID + "=" + survivor.Addr

	expectFailure(t, runCLI(t, "", "recover", "--data-dir", survivor.DataDir, "--peers", alone), "in use by another raftcron process")
	for _, node := range c.Nodes() {
		if _, err := node.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	expectFailure(t, runCLI(t, "", "recover", "--data-dir", t.TempDir(), "--peers", alone), "holds no raftcron state")
	expectFailure(t, runCLI(t, "", "recover", "--data-dir", survivor.DataDir), "--peers: required")
	expectFailure(t, runCLI(t, "", "recover", "--data-dir", survivor.DataDir, "--peers", "n1=nowhere"), "--peers")

	r := expectOK(t, runCLI(t, "", "recover", "--data-dir", survivor.DataDir, "--dry-run"))
	var members []string
	for _, n := range c.Nodes() {
		members = append(members, n.ID+"="+n.Addr)
	}
	want := fmt.Sprintf(`^%s: last entry at index \d+, term \d+; members %s; nothing changed \(dry run\)\n$`,
		regexp.QuoteMeta(survivor.DataDir), regexp.QuoteMeta(strings.Join(members, ",")))
	if !regexp.MustCompile(want).MatchString(r.Stdout) {
		t.Fatalf("dry run: %q, want %s", r.Stdout, want)
	}

	r = expectOK(t, runCLI(t, "", "recover", "--data-dir", survivor.DataDir, "--peers", alone))
	want = fmt.Sprintf(`^recovered %s at index \d+, term \d+: 2 jobs, fencing counter 0; members were %s, now %s\n$`,
		regexp.QuoteMeta(survivor.DataDir), regexp.QuoteMeta(strings.Join(members, ",")), regexp.QuoteMeta(alone))
	if !regexp.MustCompile(want).MatchString(r.Stdout) {
		t.Fatalf("recover: %q, want %s", r.Stdout, want)
	}

	restartNode(t, c, survivor)
	clustertest.WaitReady(t, c, survivor)
	if got := jobNames(t, c, survivor, false); strings.Join(got, ",") != "prune-logs,report.weekly" {
		t.Fatalf("jobs after recovery: %v", got)
	}
	expectOK(t, cliOn(t, survivor, "", "job", "apply", "-f", testutil.WriteFile(t, "nightly.yaml", nightlyJob)))
}
