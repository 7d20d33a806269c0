package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// electionTimeout is testRaft's --raft-election; contactMargin is what
// `cluster status` may lag behind it on a loaded box: the failing
// heartbeats' backoff and the CLI's own start.
const (
	electionTimeout = time.Second
	contactMargin   = 3 * time.Second
)

// deadFirst is an --addr list that names dead first, then the others.
func deadFirst(c *localcluster.Cluster, dead *localcluster.Node) string {
	addrs := []string{dead.Addr}
	for _, n := range c.Nodes() {
		if n != dead {
			addrs = append(addrs, n.Addr)
		}
	}
	return strings.Join(addrs, ",")
}

// contactOf is the CONTACT column of id in the servers table of `cluster
// status`, or "" if id has no row.
func contactOf(table, id string) string {
	_, servers, _ := strings.Cut(table, "\n\n")
	for _, line := range strings.Split(servers, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 || fields[0] != id {
			continue
		}
		// SERVER ADDRESS SUFFRAGE [*] CONTACT...
		rest := fields[3:]
		if rest[0] == "*" {
			rest = rest[1:]
		}
		return strings.Join(rest, " ")
	}
	return ""
}

// A client whose first address is a SIGKILLed node works on: reads and
// writes reach the others. With a follower killed, `cluster status` (which
// reaches the leader past the dead node) shows it unreachable once it has
// been silent for the election timeout; with the leader killed, the writes
// wait out the election and the new leader shows the old one unreachable.
func TestCLIAddrListSurvivesASIGKILL(t *testing.T) {
	c := startCluster(t, 3)
	leader := clustertest.Leader(t, c)
	follower := c.Followers(leader)[0]
	nightly := testutil.WriteFile(t, "nightly.yaml", nightlyJob)
	cli := func(addr string, args ...string) cliResult {
		return runCLI(t, "", append(args, "--addr", addr)...)
	}

	t.Run("a killed follower first", func(t *testing.T) {
		if _, err := follower.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// The leader next: its view of the contacts is the whole one.
		addrs := follower.Addr + "," + leader.Addr
		expectOK(t, cli(addrs, "job", "apply", "-f", nightly))
		var contact string
		testutil.WaitFor(t, electionTimeout+contactMargin, follower.ID+" shown unreachable by cluster status", func() bool {
			contact = contactOf(expectOK(t, cli(addrs, "cluster", "status")).Stdout, follower.ID)
			return strings.HasPrefix(contact, "unreachable (last contact ")
		})
		t.Logf("cluster status showed %s %q %s after SIGKILL", follower.ID, contact, time.Since(killed).Round(time.Millisecond))
		if r := expectOK(t, cli(addrs, "cluster", "status")); contactOf(r.Stdout, leader.ID) != "reachable" {
			t.Fatalf("the leader is not reachable in its own status:\n%s", r.Stdout)
		}
		if err := c.Restart(follower.ID); err != nil {
			t.Fatal(err)
		}
		clustertest.WaitReady(t, c)
	})

	t.Run("a killed leader first", func(t *testing.T) {
		leader := clustertest.Leader(t, c)
		addrs := deadFirst(c, leader)
		if _, err := leader.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		if r := expectOK(t, cli(addrs, "job", "pause", "nightly-billing", "--note", "after failover")); !strings.Contains(r.Stdout, "paused") {
			t.Fatalf("job pause through %s: %s", addrs, r)
		}
		t.Logf("a write through %s succeeded %s after the leader's SIGKILL", addrs, time.Since(killed).Round(time.Millisecond))
		var spec map[string]any
		r := expectOK(t, cli(addrs, "job", "get", "nightly-billing", "-o", "json"))
		if err := json.Unmarshal([]byte(r.Stdout), &spec); err != nil || spec["paused"] != true {
			t.Fatalf("job get through %s after the failover: %v\n%s", addrs, err, r.Stdout)
		}
		newLeader := clustertest.Leader(t, c)
		testutil.WaitFor(t, electionTimeout+contactMargin, "the old leader shown unreachable by the new one", func() bool {
			return strings.HasPrefix(contactOf(expectOK(t, cli(leader.Addr+","+newLeader.Addr, "cluster", "status")).Stdout, leader.ID), "unreachable")
		})
	})

	t.Run("every node down", func(t *testing.T) {
		if err := c.Crash(); err != nil {
			t.Fatal(err)
		}
		all := deadFirst(c, c.Nodes()[0])
		want := fmt.Sprintf("cannot reach raftcron at %s: connection refused", strings.ReplaceAll(all, ",", ", "))
		expectFailure(t, cli(all, "job", "get", "nightly-billing"), want)
	})
}

// A worker given every node's address outlives the node it was connected
// to: it finds the new leader and runs the next attempt.
func TestCLIWorkerSurvivesItsNode(t *testing.T) {
	c := startCluster(t, 3, "--worker-lease", "2s")
	// Worker jobs need the cluster version the first leader raises once
	// every node answers; the node that takes the job checks its own view.
	testutil.WaitFor(t, clustertest.ReadyTimeout, "the cluster version of this build on every node", func() bool {
		for _, n := range c.Nodes() {
			if st, err := n.Status(context.Background()); err != nil || st.ClusterVersion != fsm.CommandVersion {
				return false
			}
		}
		return true
	})
	all := deadFirst(c, c.Nodes()[0])
	workerLog := startWorker(t, "--id", "w1", "--pool", "batch", "--tags", "region=eu",
		"--exec-allow", "/bin/sh", "--addr", all)
	expectOK(t, runCLI(t, "", "job", "apply", "-f", testutil.WriteFile(t, "report.yaml", workerJob), "--addr", all))

	runOnWorker := func(what string) runView {
		t.Helper()
		var run runView
		r := expectOK(t, runCLI(t, "", "job", "trigger", "report", "-o", "json", "--addr", all))
		if err := json.Unmarshal([]byte(r.Stdout), &run); err != nil {
			t.Fatalf("job trigger -o json: %v\n%s", err, r.Stdout)
		}
		id := run.ID
		testutil.WaitFor(t, clustertest.CLITimeout, what, func() bool {
			r := runCLI(t, "", "run", "get", id, "-o", "json", "--addr", all)
			return r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &run) == nil && run.State == "succeeded"
		})
		if a := run.Attempts[len(run.Attempts)-1]; a.Detail != "worker w1: exit status 0" {
			t.Fatalf("%s: attempt %+v, want it run by w1", what, a)
		}
		return run
	}
	runOnWorker("a run on the worker")
	leader := clustertest.Leader(t, c)
	if !strings.Contains(lastLine(t, workerLog, "connected to the leader"), "addr="+leader.Addr) {
		t.Fatalf("the worker is not connected to the leader %s:\n%s", leader.Addr, readFile(t, workerLog))
	}

	if _, err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	newLeader := clustertest.Leader(t, c)
	runOnWorker("a run on the worker after its node's SIGKILL")
	if line := lastLine(t, workerLog, "connected to the leader"); !strings.Contains(line, "addr="+newLeader.Addr) {
		t.Fatalf("the worker's last connection %q, want one to the new leader %s", line, newLeader.Addr)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lastLine is the last line of the file at path that contains s, or "".
func lastLine(t *testing.T, path, s string) string {
	t.Helper()
	var last string
	for _, line := range strings.Split(readFile(t, path), "\n") {
		if strings.Contains(line, s) {
			last = line
		}
	}
	return last
}
