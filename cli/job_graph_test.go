package cli

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The warehouse example of the README.
const warehouse = `
- name: export-orders
  schedule: "0 1 * * *"
  http: {url: "http://shop.internal/export/orders"}
- name: export-customers
  schedule: "30 1 * * *"
  http: {url: "http://shop.internal/export/customers"}
- name: load-warehouse
  after:
    - {job: export-orders, on: success}
    - {job: export-customers, on: success}
  after_mode: all
  after_within: 1h
  http: {url: "http://warehouse.internal/load"}
- name: cleanup
  after: [{job: load-warehouse, on: failure}, {job: archive, on: any}]
  after_mode: any
  after_missing: wait
  http: {url: "http://warehouse.internal/cleanup"}
`

// chainServer is a run server at this build's cluster version holding the
// warehouse example.
func chainServer(t *testing.T) *runServer {
	t.Helper()
	s := startRunServer(t)
	if _, err := s.raft.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	expectOK(t, s.cli(t, warehouse, "job", "apply", "-f", "-"))
	return s
}

func TestCLIJobGraph(t *testing.T) {
	t.Parallel()
	s := chainServer(t)

	rows := tableRows(expectOK(t, s.cli(t, "", "job", "graph")).Stdout)
	want := map[string]string{
		"archive":          "(missing: not registered)",
		"cleanup":          "any of load-warehouse (failure), archive (any)",
		"export-customers": "-",
		"export-orders":    "-",
		"load-warehouse":   "export-orders, export-customers",
	}
	if len(rows) != len(want)+1 {
		t.Fatalf("job graph: %q", rows)
	}
	for _, row := range rows[1:] {
		if got := strings.Join(row[1:len(row)-2], " "); !strings.HasPrefix(got, want[row[0]]) {
			t.Errorf("%s runs after %q, want %q", row[0], got, want[row[0]])
		}
	}

	r := expectOK(t, s.cli(t, "", "job", "graph", "export-orders", "-o", "json"))
	var jobs []graphJob
	if err := json.Unmarshal([]byte(r.Stdout), &jobs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	if got := strings.Join(names, " "); got != "cleanup export-orders load-warehouse" {
		t.Fatalf("graph of export-orders: %s", got)
	}
	expectFailure(t, s.cli(t, "", "job", "graph", "nope"), `job "nope" not found`)
	if r := s.cli(t, "", "job", "graph", "-o", "png"); r.Code != ExitUsage {
		t.Fatalf("-o png: %s", r)
	}
}

// The DOT output renders with Graphviz.
func TestCLIJobGraphRendersWithGraphviz(t *testing.T) {
	t.Parallel()
	dot := testutil.NeedTool(t, "dot", "install Graphviz (Debian: apt-get install graphviz)")
	s := chainServer(t)
	src := expectOK(t, s.cli(t, "", "job", "graph", "-o", "dot")).Stdout
	for _, edge := range []string{`"export-orders" -> "load-warehouse" [label="success"]`, `"archive" [label="archive\n(missing)", style=dashed]`} {
		if !strings.Contains(src, edge) {
			t.Errorf("dot output lacks %s:\n%s", edge, src)
		}
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	out, err := cmd.CombinedOutput()
	svg := string(out)
	if err != nil || !strings.Contains(svg, "<svg") || strings.Count(svg, `class="node"`) != 5 || strings.Count(svg, `class="edge"`) != 4 {
		t.Fatalf("dot -Tsvg: %v, want 5 nodes and 4 edges:\n%s\nof\n%s", err, out, src)
	}
}

// job next of a job that runs after others says what it waits for; run get
// shows a run's parents and the runs it fired; a parent is deleted only
// with --force.
func TestCLIChainedJobs(t *testing.T) {
	t.Parallel()
	s := chainServer(t)
	r := expectOK(t, s.cli(t, "", "job", "next", "load-warehouse"))
	if r.Stdout != "after export-orders, export-customers\n" {
		t.Fatalf("job next of a dependent job: %q", r.Stdout)
	}

	var parents []*pb.Run
	for _, job := range []string{"export-orders", "export-customers"} {
		res, err := s.raft.Trigger(context.Background(), &pb.Fire{Job: job})
		if err != nil {
			t.Fatal(err)
		}
		parents = append(parents, res.GetRun())
		s.raft.complete(t, res.GetRunId(), res.GetToken(), pb.RunState_RUN_STATE_SUCCEEDED)
	}
	children, err := s.raft.state.RunsPage(fsm.RunQuery{Job: "load-warehouse"}), error(nil)
	if err != nil || len(children.Runs) != 1 {
		t.Fatalf("load-warehouse runs: %v", children.Runs)
	}
	child := children.Runs[0].GetId()
	out := expectOK(t, s.cli(t, "", "run", "get", child)).Stdout
	for _, p := range parents {
		if !strings.Contains(out, p.GetId()) {
			t.Errorf("run get %s does not show parent %s:\n%s", child, p.GetId(), out)
		}
	}
	var v runView
	if err := json.Unmarshal([]byte(expectOK(t, s.cli(t, "", "run", "get", parents[1].GetId(), "-o", "json")).Stdout), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Children) != 1 || v.Children[0].RunID != child || v.Children[0].Job != "load-warehouse" {
		t.Fatalf("run get of a parent as JSON: children %+v, want %s", v.Children, child)
	}

	expectFailure(t, s.cli(t, "", "job", "delete", "export-orders"), "is a parent (after) of load-warehouse")
	expectOK(t, s.cli(t, "", "job", "delete", "export-orders", "--force"))
}
