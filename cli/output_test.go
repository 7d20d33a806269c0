package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func sampleJob(name string) *pb.Job {
	return &pb.Job{
		Spec: &pb.JobSpec{
			Name: name, Schedule: "0 2 * * *", Timezone: "Europe/Berlin",
			Http: &pb.HttpTarget{Url: "http://billing.internal/run", Method: "POST"},
		},
		Generation: 2, Version: 5,
	}
}

func TestJobTableShowsTheColumns(t *testing.T) {
	t.Parallel()
	paused := sampleJob("b")
	paused.Spec.Paused, paused.Spec.PauseNote = true, "db upgrade"
	paused.Spec.Http, paused.Spec.Exec = nil, &pb.ExecTarget{Command: []string{"/bin/prune", "--days", "30 days"}}
	paused.Spec.Schedule, paused.Spec.Schedules = "", []string{"0 9 * * mon-fri", "0 12 * * sat"}
	var out bytes.Buffer
	if err := writeJobList(&out, outputTable, []*pb.Job{sampleJob("a"), paused}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want header and 2 rows, got %q", out.String())
	}
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME SCHEDULE TIMEZONE TARGET PAUSED GENERATION VERSION" {
		t.Fatalf("header %q", lines[0])
	}
	for _, want := range []string{"a", "0 2 * * *", "Europe/Berlin", "http POST http://billing.internal/run", "no", " 2 ", " 5"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	for _, want := range []string{"0 9 * * mon-fri | 0 12 * * sat", `exec /bin/prune --days "30 days"`, "yes: db upgrade"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("row %q lacks %q", lines[2], want)
		}
	}
}

func TestJobYAMLAndJSONAreTheJobFileFormat(t *testing.T) {
	t.Parallel()
	job := sampleJob("a")
	for _, format := range []outputFormat{outputYAML, outputJSON} {
		var out bytes.Buffer
		if err := writeJob(&out, format, job); err != nil {
			t.Fatal(err)
		}
		specs, err := jobfile.Decode(out.Bytes())
		if err != nil {
			t.Fatalf("%s output does not decode as a job file: %v\n%s", format, err, out.String())
		}
		if len(specs) != 1 || specs[0].GetName() != "a" || specs[0].GetHttp().GetUrl() != "http://billing.internal/run" {
			t.Fatalf("%s round trip: %v", format, specs)
		}
	}
}

func TestJobListJSONIsAlwaysAnArrayAndDecodesBack(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2} {
		jobs := []*pb.Job{}
		for i := range n {
			jobs = append(jobs, sampleJob(string(rune('a'+i))))
		}
		for _, format := range []outputFormat{outputJSON, outputYAML} {
			var out bytes.Buffer
			if err := writeJobList(&out, format, jobs); err != nil {
				t.Fatal(err)
			}
			if format == outputJSON {
				var arr []map[string]any
				if err := json.Unmarshal(out.Bytes(), &arr); err != nil || len(arr) != n {
					t.Fatalf("%d jobs: JSON %q is not an array of %d: %v", n, out.String(), n, err)
				}
			}
			if n == 0 {
				continue
			}
			specs, err := jobfile.Decode(out.Bytes())
			if err != nil || len(specs) != n {
				t.Fatalf("%d jobs as %s: decode gave %d specs, %v\n%s", n, format, len(specs), err, out.String())
			}
		}
	}
}

func TestWriteChanges(t *testing.T) {
	t.Parallel()
	changes := []change{changeOf(sampleJob("a"), "created"), {Name: "b", Result: "deleted"}}
	var out bytes.Buffer
	if err := writeChanges(&out, outputTable, changes); err != nil {
		t.Fatal(err)
	}
	if want := "job a created (version 5)\njob b deleted\n"; out.String() != want {
		t.Fatalf("table: %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := writeChanges(&out, outputJSON, changes); err != nil {
		t.Fatal(err)
	}
	var got []change
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 2 || got[0].Version != 5 || got[1].Result != "deleted" {
		t.Fatalf("json %q: %v", out.String(), err)
	}
	out.Reset()
	if err := writeChanges(&out, outputYAML, changes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "- generation: 2\n  name: a\n  result: created\n  version: 5\n") {
		t.Fatalf("yaml %q", out.String())
	}
}

func TestOutputFormatRejectsUnknown(t *testing.T) {
	t.Parallel()
	var f outputFormat
	if err := f.Set("xml"); err == nil {
		t.Fatal("xml accepted")
	}
	if err := f.Set("YAML"); err != nil || f != outputYAML {
		t.Fatalf("YAML: %v %q", err, f)
	}
}

func TestStatusOutput(t *testing.T) {
	t.Parallel()
	st := &pb.NodeStatus{
		Id: "n1", State: "leader", Leader: &pb.ServerRef{Id: "n1", Address: "127.0.0.1:7001"},
		Term: 3, CommitIndex: 10, AppliedIndex: 9, LastLogIndex: 10, FencingToken: 42, ClusterVersion: 7, CommandVersion: 8,
		Servers: []*pb.Server{{Id: "n1", Address: "127.0.0.1:7001", Suffrage: "voter", Leader: true, Contact: "reachable"},
			{Id: "n2", Address: "127.0.0.1:7002", Suffrage: "voter", Contact: "unreachable", LastContactUnixNano: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC).UnixNano()}},
	}
	var out bytes.Buffer
	if err := writeStatus(&out, outputTable, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"n1 (127.0.0.1:7001)", "leader", "42", "n2", "voter", "*", "reachable",
		"unreachable (last contact 2026-11-22T01:02:03Z)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	lines := strings.Split(out.String(), "\n")
	if head, row := strings.Fields(lines[0]), strings.Fields(lines[1]); !slices.Equal(head[len(head)-2:], []string{"CLUSTER-VERSION", "COMMAND-VERSION"}) ||
		!slices.Equal(row[len(row)-2:], []string{"7", "8"}) {
		t.Errorf("table lacks the cluster and command versions:\n%s", out.String())
	}
	out.Reset()
	if err := writeStatus(&out, outputJSON, st); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["state"] != "leader" || got["fencing_token"] != float64(42) || got["leader"].(map[string]any)["address"] != "127.0.0.1:7001" ||
		got["cluster_version"] != float64(7) {
		t.Fatalf("json: %s", out.String())
	}
}
