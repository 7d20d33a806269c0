package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

const nightlyJob = `name: nightly-billing
schedule: "0 2 * * *"
timezone: Europe/Berlin
http:
  url: http://billing.internal/run
  timeout: 30s
labels: {team: billing}
`

const twoJobs = `- name: prune-logs
  schedule: "@every 30s"
  exec: {command: [/usr/local/bin/prune, --days, "30"], timeout: 10m}
  labels: {team: ops}
- name: report.weekly
  schedule: "0 8 * * 1"
  http: {url: "https://reports.internal/weekly", method: GET}
  labels: {team: finance}
`

// versionOf reads the VERSION column of `job get NAME` (table output: the
// spec block, then the status block).
func versionOf(t *testing.T, c *localcluster.Cluster, node *localcluster.Node, name string) string {
	t.Helper()
	r := expectOK(t, cliOn(t, node, "", "job", "get", name))
	lines := strings.Split(specBlock(r.Stdout), "\n")
	fields := strings.Fields(lines[len(lines)-1])
	return fields[len(fields)-1]
}

// specBlock is the first block of `job get`: the header and the job's row.
func specBlock(out string) string {
	block, _, _ := strings.Cut(out, "\n\n")
	return strings.TrimSpace(block)
}

func TestCLIJobLifecycle(t *testing.T) {
	// twoJobs runs /usr/local/bin/prune
	c := startCluster(t, 3, append([]string{"--exec-allow", "/usr/local/bin/*"}, testutil.ExecUserArgs()...)...)
	leader := clustertest.Leader(t, c)
	follower := clustertest.Follower(t, c)
	nightly := testutil.WriteFile(t, "nightly.yaml", nightlyJob)

	t.Run("apply creates then is unchanged", func(t *testing.T) {
		r := expectOK(t, cliOn(t, leader, "", "job", "apply", "-f", nightly))
		if r.Stdout != "job nightly-billing created (version 1)\n" {
			t.Fatalf("first apply: %q", r.Stdout)
		}
		r = expectOK(t, cliOn(t, follower, "", "job", "apply", "-f", nightly))
		if r.Stdout != "job nightly-billing unchanged (version 1)\n" {
			t.Fatalf("second apply: %q", r.Stdout)
		}
	})

	t.Run("get through a follower", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "get", "nightly-billing"))
		lines := strings.Split(specBlock(r.Stdout), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
			t.Fatalf("table: %q", r.Stdout)
		}
		row := regexp.MustCompile(`\s{3,}`).Split(lines[1], -1)
		want := []string{"nightly-billing", "0 2 * * *", "Europe/Berlin", "http POST http://billing.internal/run", "no", "1", "1"}
		if strings.Join(row, "|") != strings.Join(want, "|") {
			t.Fatalf("row %q, want %q", row, want)
		}

		r = expectOK(t, cliOn(t, follower, "", "job", "get", "nightly-billing", "-o", "json"))
		var spec map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &spec); err != nil {
			t.Fatalf("json: %v\n%s", err, r.Stdout)
		}
		if spec["name"] != "nightly-billing" || spec["http"].(map[string]any)["method"] != "POST" || spec["http"].(map[string]any)["timeout"] != "30s" {
			t.Fatalf("json spec: %s", r.Stdout)
		}

		r = expectOK(t, cliOn(t, follower, "", "job", "get", "nightly-billing", "-o", "yaml", "--stale"))
		if !strings.HasPrefix(r.Stdout, "name: nightly-billing\n") || !strings.Contains(r.Stdout, "timezone: Europe/Berlin") {
			t.Fatalf("yaml: %q", r.Stdout)
		}
	})

	t.Run("get -o yaml applies back unchanged", func(t *testing.T) {
		yaml := expectOK(t, cliOn(t, follower, "", "job", "get", "nightly-billing", "-o", "yaml")).Stdout
		r := expectOK(t, cliOn(t, leader, yaml, "job", "apply", "-f", "-"))
		if r.Stdout != "job nightly-billing unchanged (version 1)\n" {
			t.Fatalf("round trip: %q", r.Stdout)
		}
		if v := versionOf(t, c, leader, "nightly-billing"); v != "1" {
			t.Fatalf("version moved to %s", v)
		}
	})

	t.Run("pause with note and resume", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "pause", "nightly-billing", "--note", "db upgrade"))
		if r.Stdout != "job nightly-billing paused (version 2)\n" {
			t.Fatalf("pause: %q", r.Stdout)
		}
		yaml := expectOK(t, cliOn(t, leader, "", "job", "get", "nightly-billing", "-o", "yaml")).Stdout
		if !strings.Contains(yaml, "paused: true") || !strings.Contains(yaml, "pause_note: db upgrade") {
			t.Fatalf("paused yaml: %q", yaml)
		}
		r = expectOK(t, cliOn(t, leader, yaml, "job", "apply", "-f", "-"))
		if r.Stdout != "job nightly-billing unchanged (version 2)\n" {
			t.Fatalf("paused round trip: %q", r.Stdout)
		}
		table := expectOK(t, cliOn(t, leader, "", "job", "get", "nightly-billing")).Stdout
		if !strings.Contains(table, "yes: db upgrade") {
			t.Fatalf("table: %q", table)
		}
		r = expectOK(t, cliOn(t, leader, "", "job", "resume", "nightly-billing"))
		if r.Stdout != "job nightly-billing resumed (version 3)\n" {
			t.Fatalf("resume: %q", r.Stdout)
		}
		yaml = expectOK(t, cliOn(t, follower, "", "job", "get", "nightly-billing", "-o", "yaml")).Stdout
		if strings.Contains(yaml, "paused") || strings.Contains(yaml, "pause_note") {
			t.Fatalf("resumed yaml: %q", yaml)
		}
	})

	t.Run("a file with a list of two jobs", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "apply", "-f", testutil.WriteFile(t, "two.yaml", twoJobs)))
		if r.Stdout != "job prune-logs created (version 1)\njob report.weekly created (version 1)\n" {
			t.Fatalf("apply list: %q", r.Stdout)
		}
		r = expectOK(t, cliOn(t, leader, "", "job", "list"))
		names := tableNames(r.Stdout)
		if strings.Join(names, ",") != "nightly-billing,prune-logs,report.weekly" {
			t.Fatalf("list: %v\n%s", names, r.Stdout)
		}
		r = expectOK(t, cliOn(t, follower, "", "job", "list", "--label", "team=ops", "-o", "json"))
		var jobs []map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &jobs); err != nil || len(jobs) != 1 || jobs[0]["name"] != "prune-logs" {
			t.Fatalf("list --label: %v %s", err, r.Stdout)
		}
		r = expectOK(t, cliOn(t, follower, "", "job", "list", "--limit", "2"))
		if got := tableNames(r.Stdout); len(got) != 2 {
			t.Fatalf("list --limit 2: %v", got)
		}
		// The list as YAML applies back without changing anything.
		yaml := expectOK(t, cliOn(t, follower, "", "job", "list", "-o", "yaml")).Stdout
		r = expectOK(t, cliOn(t, leader, yaml, "job", "apply", "-f", "-"))
		if strings.Count(r.Stdout, " unchanged ") != 3 {
			t.Fatalf("list round trip: %q", r.Stdout)
		}
	})

	t.Run("create refuses a taken name", func(t *testing.T) {
		expectFailure(t, cliOn(t, leader, "", "job", "create", "-f", nightly), `job "nightly-billing" already exists`)
	})

	t.Run("update with a stale version", func(t *testing.T) {
		v1 := strings.Replace(nightlyJob, "nightly-billing", "versioned", 1)
		expectOK(t, cliOn(t, leader, v1, "job", "create", "-f", "-"))
		v2 := strings.Replace(v1, "0 2 * * *", "0 3 * * *", 1)
		r := expectOK(t, cliOn(t, follower, v2, "job", "apply", "-f", "-", "--version", "1"))
		if r.Stdout != "job versioned updated (version 2)\n" {
			t.Fatalf("update at version 1: %q", r.Stdout)
		}
		before := listJSON(t, c, leader)
		v3 := strings.Replace(v1, "0 2 * * *", "0 4 * * *", 1)
		expectFailure(t, cliOn(t, follower, v3, "job", "apply", "-f", "-", "--version", "1"), "version", "stale")
		expectFailure(t, cliOn(t, follower, "", "job", "delete", "versioned", "--version", "1"), "version", "stale")
		if after := listJSON(t, c, leader); after != before {
			t.Fatalf("stale update changed the registry:\n%s\n%s", before, after)
		}
		if v := versionOf(t, c, leader, "versioned"); v != "2" {
			t.Fatalf("version %s after refused updates", v)
		}
		expectOK(t, cliOn(t, leader, "", "job", "delete", "versioned", "--version", "2"))
	})

	t.Run("bad input is refused whole", func(t *testing.T) {
		testBadJobInput(t, c, leader, follower)
	})

	t.Run("run side", func(t *testing.T) {
		testRunSideCommands(t, c, leader, follower)
	})

	t.Run("delete", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "delete", "nightly-billing"))
		if r.Stdout != "job nightly-billing deleted\n" {
			t.Fatalf("delete: %q", r.Stdout)
		}
		expectFailure(t, cliOn(t, leader, "", "job", "get", "nightly-billing"), `job "nightly-billing" not found`)
		expectFailure(t, cliOn(t, follower, "", "job", "delete", "nightly-billing"), `job "nightly-billing" not found`)
	})

	t.Run("cluster status", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "cluster", "status", "-o", "json"))
		var st struct {
			ID      string              `json:"id"`
			State   string              `json:"state"`
			Leader  struct{ ID string } `json:"leader"`
			Servers []struct {
				ID     string
				Leader bool
			} `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			t.Fatalf("%v\n%s", err, r.Stdout)
		}
		leaders := 0
		for _, s := range st.Servers {
			if s.Leader {
				leaders++
				if s.ID != st.Leader.ID {
					t.Fatalf("servers mark %s as leader, leader is %s", s.ID, st.Leader.ID)
				}
			}
		}
		if st.ID != follower.ID || len(st.Servers) != 3 || leaders != 1 || !strings.HasPrefix(st.Leader.ID, "n") {
			t.Fatalf("status: %s", r.Stdout)
		}
		table := expectOK(t, cliOn(t, leader, "", "cluster", "status")).Stdout
		if !strings.HasPrefix(table, "NODE") || !strings.Contains(table, "SUFFRAGE") || strings.Count(table, "voter") != 3 {
			t.Fatalf("status table: %q", table)
		}
	})

	t.Run("bad serve input", func(t *testing.T) {
		testBadServeInput(t, c)
	})
}

// tableNames is the NAME column of a job table.
func tableNames(table string) []string {
	var names []string
	for i, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if i > 0 && line != "" {
			names = append(names, strings.Fields(line)[0])
		}
	}
	return names
}

// listJSON is the whole registry as the CLI prints it, for before/after checks.
func listJSON(t *testing.T, c *localcluster.Cluster, node *localcluster.Node) string {
	t.Helper()
	return expectOK(t, cliOn(t, node, "", "job", "list", "-o", "json")).Stdout + expectOK(t, cliOn(t, node, "", "job", "list")).Stdout
}

func testBadJobInput(t *testing.T, c *localcluster.Cluster, leader, follower *localcluster.Node) {
	job := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
	const (
		name  = "name: bad-input"
		sched = `schedule: "0 2 * * *"`
		http  = "http: {url: http://svc.internal/run}"
		exec  = "exec: {command: [/bin/true]}"
	)
	cases := []struct {
		name string
		file string
		want []string
	}{
		{"minute out of range", job(name, `schedule: "61 * * * *"`, http), []string{`invalid job "bad-input"`, "schedule:"}},
		{"unknown timezone", job(name, sched, "timezone: Mars/Olympus_Mons", http), []string{"timezone:"}},
		{"name with spaces", job("name: bad input", sched, http), []string{"name:"}},
		{"name with capitals", job("name: BadInput", sched, http), []string{"name:"}},
		{"TZ= prefix", job(name, `schedule: "TZ=Europe/Berlin 0 2 * * *"`, http), []string{"schedule:", "TZ="}},
		{"spec that never fires", job(name, `schedule: "0 0 30 2 *"`, http), []string{"schedule:"}},
		{"both http and exec", job(name, sched, http, exec), []string{"http", "exec"}},
		{"neither http nor exec", job(name, sched), []string{"http", "exec"}},
		{"relative URL", job(name, sched, "http: {url: /run}"), []string{"http.url:"}},
		{"negative duration", job(name, sched, http, "deadline: -5s"), []string{"deadline:"}},
		{"unparsable YAML", job(name, "schedule: [0 2 * * *", http), []string{"YAML"}},
		{"unknown field", job(name, sched, http, "scheduel: daily"), []string{`unknown field "scheduel"`}},
		{"bad duration", job(name, sched, http, "deadline: 5 minutes"), []string{"deadline:"}},
		{"second job of a list invalid", "- " + strings.Join([]string{name, sched, http}, "\n  ") +
			"\n- " + strings.Join([]string{"name: bad-input-2", `schedule: "61 * * * *"`, http}, "\n  ") + "\n",
			[]string{`invalid job "bad-input-2"`, "schedule:"}},
	}
	before := listJSON(t, c, leader)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := testutil.WriteFile(t, "job.yaml", tc.file)
			expectFailure(t, cliOn(t, follower, "", "job", "apply", "-f", path), tc.want...)
			expectFailure(t, cliOn(t, leader, tc.file, "job", "create", "-f", "-"), tc.want...)
			if after := listJSON(t, c, leader); after != before {
				t.Fatalf("the registry changed:\nbefore %s\nafter %s", before, after)
			}
		})
	}
	t.Run("bad name in get", func(t *testing.T) {
		expectFailure(t, cliOn(t, follower, "", "job", "get", "Bad Name"), "name")
	})
}

func testBadServeInput(t *testing.T, c *localcluster.Cluster) {
	n1 := c.Nodes()[0]
	free := clustertest.FreeAddrs(t, 2)
	serve := func(args ...string) cliResult {
		return runCLI(t, "", append([]string{"serve"}, append(args, testRaft...)...)...)
	}
	t.Run("second node on the same data dir", func(t *testing.T) {
		start := time.Now()
		r := serve("--id", n1.ID, "--data-dir", n1.DataDir, "--addr", free[0], "--http-addr", free[1])
		expectFailure(t, r, "in use by another raftcron process")
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("refusing the locked data dir took %s", took)
		}
	})
	t.Run("peers without id", func(t *testing.T) {
		r := serve("--id", "n9", "--data-dir", t.TempDir(), "--addr", free[0], "--http-addr", free[1],
			"--peers", "n1="+n1.Addr)
		expectFailure(t, r, "--peers: must contain this node's ID n9")
	})
	t.Run("addr port in use", func(t *testing.T) {
		r := serve("--id", "n9", "--data-dir", t.TempDir(), "--addr", n1.Addr, "--http-addr", free[1])
		expectFailure(t, r, "--addr", "in use")
	})
	t.Run("http-addr port in use", func(t *testing.T) {
		r := serve("--id", "n9", "--data-dir", t.TempDir(), "--addr", free[0], "--http-addr", n1.HTTPAddr)
		expectFailure(t, r, "--http-addr", "in use")
	})
	t.Run("unknown config key", func(t *testing.T) {
		cfg := testutil.WriteFile(t, "raftcron.yaml", "id: n9\ndata-dir: /tmp/none\nheartbeat: 1s\n")
		expectFailure(t, serve("--config", cfg), `unknown key "heartbeat"`)
	})
	if !n1.Running() || !n1.Ready(context.Background()) {
		t.Fatal("n1 suffered from the refused nodes")
	}
}

func TestCLIGracefulStopAndRestart(t *testing.T) {
	c := startCluster(t, 3)
	leader := clustertest.Leader(t, c)
	expectOK(t, cliOn(t, leader, nightlyJob, "job", "apply", "-f", "-"))

	t.Run("SIGTERM a follower", func(t *testing.T) {
		f := clustertest.Follower(t, c)
		if code := stopNode(t, f); code != 0 {
			t.Fatalf("%s exited %d", f.ID, code)
		}
		restartNode(t, c, f)
		clustertest.WaitReady(t, c)
	})

	t.Run("SIGTERM the leader", func(t *testing.T) {
		old := clustertest.Leader(t, c)
		before, err := old.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if code := stopNode(t, old); code != 0 {
			t.Fatalf("leader %s exited %d", old.ID, code)
		}
		next := clustertest.Leader(t, c)
		st, err := next.Status(context.Background())
		if err != nil || next == old || st.Term <= before.Term {
			t.Fatalf("new leader %s (term %d, was %d): %v", next.ID, st.Term, before.Term, err)
		}
		if st.CommandVersion != fsm.CommandVersion || st.ClusterVersion != fsm.CommandVersion {
			t.Errorf("/status of %s: command_version %d, cluster_version %d, want this build's %d for both",
				next.ID, st.CommandVersion, st.ClusterVersion, fsm.CommandVersion)
		}
		restartNode(t, c, old)
		clustertest.WaitReady(t, c)
	})

	t.Run("restart all", func(t *testing.T) {
		for _, node := range c.Nodes() {
			if err := node.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		for _, node := range c.Nodes() {
			if code, err := node.WaitExit(exitTimeout); err != nil || code != 0 {
				t.Fatalf("%s exited %d (%v)", node.ID, code, err)
			}
		}
		for _, node := range c.Nodes() {
			restartNode(t, c, node)
		}
		clustertest.WaitReady(t, c)
		r := expectOK(t, cliOn(t, clustertest.Follower(t, c), "", "job", "get", "nightly-billing", "-o", "yaml"))
		r = expectOK(t, cliOn(t, clustertest.Leader(t, c), r.Stdout, "job", "apply", "-f", "-"))
		if r.Stdout != "job nightly-billing unchanged (version 1)\n" {
			t.Fatalf("after restart: %q", r.Stdout)
		}
	})
}

// testRunSideCommands covers the run-side commands on a live cluster:
// previews, the ledger, a job's status, fence checks and a manual run.
func testRunSideCommands(t *testing.T, c *localcluster.Cluster, leader, follower *localcluster.Node) {
	const job = "nightly-billing" // fires at 02:00 Berlin time only: its runs are the ones made here
	t.Run("job next of a job", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "next", job, "--count", "3", "-o", "json"))
		var times []string
		if err := json.Unmarshal([]byte(r.Stdout), &times); err != nil || len(times) != 3 {
			t.Fatalf("job next: %q %v", r.Stdout, err)
		}
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range times {
			at, err := time.Parse(time.RFC3339, ts)
			if err != nil || at.In(berlin).Format("15:04") != "02:00" || !at.After(time.Now()) {
				t.Fatalf("fire time %q is not a future 02:00 in Europe/Berlin", ts)
			}
		}
		table := expectOK(t, cliOn(t, leader, "", "job", "next", job)).Stdout
		if rows := tableRows(table); len(rows) != 6 || strings.Join(rows[0], "|") != "FIRE TIME (UTC)|FIRE TIME (Europe/Berlin)" {
			t.Fatalf("job next table (default 5 times, UTC and the job's zone): %q", table)
		}
	})
	t.Run("job next of an inline schedule", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "next", "--schedule", "30 2 * * *", "--timezone", "Europe/Berlin",
			"--after", "2026-10-24T12:00:00Z", "--count", "2", "-o", "json"))
		var times []string
		if err := json.Unmarshal([]byte(r.Stdout), &times); err != nil || strings.Join(times, ",") != "2026-10-25T00:30:00Z,2026-10-26T01:30:00Z" {
			t.Fatalf("inline next over the fall-back night: %q %v", r.Stdout, err)
		}
		expectFailure(t, cliOn(t, follower, "", "job", "next", "--schedule", "61 * * * *"), "schedule:")
	})
	t.Run("no runs yet", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "run", "list", "--job", job))
		if rows := tableRows(r.Stdout); len(rows) != 1 || strings.Join(rows[0], "\t") != runHeader {
			t.Fatalf("run list of a job without runs: %q", r.Stdout)
		}
		r = expectOK(t, cliOn(t, leader, "", "run", "list", "--job", job, "-o", "json"))
		if strings.TrimSpace(r.Stdout) != "[]" {
			t.Fatalf("run list -o json: %q", r.Stdout)
		}
		expectFailure(t, cliOn(t, follower, "", "run", "get", job+"-999999"), `run "nightly-billing-999999" not found`)
		r = expectOK(t, cliOn(t, follower, "", "job", "status", job, "-o", "json"))
		var st jobStatusView
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.LatestToken != 0 || st.NextFire == "" || st.LastRunID != "" {
			t.Fatalf("job status: %q %v", r.Stdout, err)
		}
		table := expectOK(t, cliOn(t, leader, "", "job", "get", job)).Stdout
		if _, block, ok := strings.Cut(table, "\n\n"); !ok || !strings.HasPrefix(block, "NEXT FIRE") || !strings.Contains(block, st.NextFire) {
			t.Fatalf("job get status block: %q", table)
		}
		// Latest token 0: any real token is current.
		r = expectOK(t, cliOn(t, follower, "", "fence", "check", "--job", job, "--token", "1"))
		if r.Stdout != "current (latest token 0)\n" {
			t.Fatalf("fence check: %q", r.Stdout)
		}
		expectFailure(t, cliOn(t, leader, "", "fence", "check", "--job", "no-such-job", "--token", "1"), `job "no-such-job" not found`)
	})
	t.Run("trigger through a follower", func(t *testing.T) {
		r := expectOK(t, cliOn(t, follower, "", "job", "trigger", job, "--request-id", "cli-test-1", "-o", "json"))
		var run runView
		if err := json.Unmarshal([]byte(r.Stdout), &run); err != nil || run.Kind != "manual" || len(run.Attempts) != 1 {
			t.Fatalf("trigger: %q %v", r.Stdout, err)
		}
		token := run.Attempts[0].Token
		if run.ID != fmt.Sprintf("%s-%d", job, token) || run.RequestID != "cli-test-1" {
			t.Fatalf("run %+v", run)
		}
		again := expectOK(t, cliOn(t, leader, "", "job", "trigger", job, "--request-id", "cli-test-1")).Stdout
		if !strings.Contains(again, "run "+run.ID+", token "+strconv.FormatUint(token, 10)+", attempt 1") {
			t.Fatalf("the same request id ran again: %q, first run %s", again, run.ID)
		}
		r = expectOK(t, cliOn(t, follower, "", "fence", "check", "--job", job, "--token", strconv.FormatUint(token, 10)))
		if r.Stdout != fmt.Sprintf("current (latest token %d)\n", token) {
			t.Fatalf("fence check of the run's token: %q", r.Stdout)
		}
		rows := tableRows(expectOK(t, cliOn(t, follower, "", "run", "list", "--job", job)).Stdout)
		if len(rows) != 2 || rows[1][0] != run.ID || rows[1][3] != "manual" {
			t.Fatalf("run list after the trigger: %q", rows)
		}
		if r := expectOK(t, cliOn(t, leader, "", "run", "get", run.ID)); !strings.Contains(r.Stdout, "ATTEMPT") {
			t.Fatalf("run get: %q", r.Stdout)
		}
		expectFailure(t, cliOn(t, follower, "", "job", "trigger", "no-such-job"), `job "no-such-job" not found`)
	})
}
