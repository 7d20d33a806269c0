package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// quietJobs never fire during a test, so the fencing counter stays 0.
const quietJobs = `- name: prune-logs
  schedule: "0 3 * * *"
  http: {url: "http://ops.internal/prune"}
- name: report.weekly
  schedule: "0 8 * * 1"
  http: {url: "https://reports.internal/weekly", method: GET}
`

// jobNames lists the jobs through node, one per line of `job list`.
func jobNames(t *testing.T, c *localcluster.Cluster, node *localcluster.Node, stale bool) []string {
	t.Helper()
	args := []string{"job", "list", "-o", "json"}
	if stale {
		args = append(args, "--stale")
	}
	var specs []struct {
		Name string `json:"name"`
	}
	r := expectOK(t, cliOn(t, node, "", args...))
	if err := json.Unmarshal([]byte(r.Stdout), &specs); err != nil {
		t.Fatalf("job list -o json: %v\n%s", err, r.Stdout)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

// Save through a follower (the CLI goes to the leader), inspect, change the
// registry, refuse damaged copies without changing anything, then restore
// through a follower: every node is back at the saved registry.
func TestCLISnapshotSaveInspectRestore(t *testing.T) {
	c := startCluster(t, 3)
	follower := clustertest.Follower(t, c)
	expectOK(t, cliOn(t, follower, "", "job", "apply", "-f", testutil.WriteFile(t, "two.yaml", quietJobs)))
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")

	before := leaderAndTerm(t, c)
	r := expectOK(t, cliOn(t, follower, "", "snapshot", "save", file))
	if !regexp.MustCompile(`^saved snapshot at index \d+ \(term \d+\) to .*backup.snap: 2 jobs, 0 open runs, fencing counter 0, sha256 [0-9a-f]{64}\n$`).MatchString(r.Stdout) {
		t.Fatalf("save output %q", r.Stdout)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".backup.snap.tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	r = expectOK(t, runCLI(t, "", "snapshot", "inspect", file, "-o", "json"))
	var info backupView
	if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil {
		t.Fatalf("inspect -o json: %v\n%s", err, r.Stdout)
	}
	if info.Version != 1 || info.Index == 0 || info.Term == 0 || info.Jobs != 2 ||
		len(info.SHA256) != 64 || info.TakenAt == "" || info.File != file {
		t.Fatalf("inspect: %+v", info)
	}
	wantTakenBy(t, c, info.TakenBy, before, leaderAndTerm(t, c))
	leader := clustertest.Leader(t, c)
	r = expectOK(t, runCLI(t, "", "snapshot", "inspect", file))
	for _, want := range []string{"INDEX", "TERM", "TAKEN AT", "JOBS", "OPEN RUNS", "FENCING COUNTER", "SHA256", info.SHA256} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("inspect table lacks %q:\n%s", want, r.Stdout)
		}
	}

	expectOK(t, cliOn(t, leader, "", "job", "apply", "-f", testutil.WriteFile(t, "nightly.yaml", nightlyJob)))
	expectOK(t, cliOn(t, leader, "", "job", "delete", "prune-logs"))
	changed := []string{"nightly-billing", "report.weekly"}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[string]struct {
		data []byte
		want string
	}{
		"truncated": {data[:len(data)-7], "truncated"},
		"corrupted": {flipByte(data, len(data)/2), "checksum mismatch"},
		"version":   {[]byte(strings.Replace(string(data), "snapshot v1", "snapshot v7", 1)), "version 7"},
	}
	for name, d := range damaged {
		path := filepath.Join(dir, name+".snap")
		if err := os.WriteFile(path, d.data, 0o600); err != nil {
			t.Fatal(err)
		}
		expectFailure(t, runCLI(t, "", "snapshot", "inspect", path), d.want)
		expectFailure(t, cliOn(t, follower, "", "snapshot", "restore", path), d.want)
	}
	if got := jobNames(t, c, leader, false); strings.Join(got, ",") != strings.Join(changed, ",") {
		t.Fatalf("after refused restores the jobs are %v, want %v", got, changed)
	}

	r = expectOK(t, cliOn(t, follower, "", "snapshot", "restore", file))
	if !regexp.MustCompile(`^restored .*backup.snap \(taken at index \d+\) as index \d+: 2 jobs, 0 open runs; fencing counter 0 \(the file had 0\); ACL tokens and audit trail kept as they were\n$`).MatchString(r.Stdout) {
		t.Fatalf("restore output %q", r.Stdout)
	}
	for _, node := range c.Nodes() {
		testutil.WaitFor(t, clustertest.ReadyTimeout, node.ID+" has the restored registry", func() bool {
			return strings.Join(jobNames(t, c, node, true), ",") == "prune-logs,report.weekly"
		})
	}
	clustertest.WaitReady(t, c)
}

// leadership is who leads in which term.
type leadership struct {
	id   string
	term uint64
}

func leaderAndTerm(t *testing.T, c *localcluster.Cluster) leadership {
	t.Helper()
	l := clustertest.Leader(t, c)
	st, err := l.Status(t.Context())
	if err != nil {
		t.Fatalf("status of the leader %s: %v", l.ID, err)
	}
	return leadership{id: l.ID, term: st.Term}
}

// wantTakenBy checks the node a snapshot names as its taker: the leader
// of before when it still led in the same term after (no election came
// between), else one of the cluster's nodes, since an election under load
// may have moved the save to another leader.
func wantTakenBy(t *testing.T, c *localcluster.Cluster, takenBy string, before, after leadership) {
	t.Helper()
	if before == after {
		if takenBy != before.id {
			t.Fatalf("snapshot taken by %q, want the leader %s (term %d throughout)", takenBy, before.id, before.term)
		}
		return
	}
	for _, n := range c.Nodes() {
		if n.ID == takenBy {
			t.Logf("leadership moved from %v to %v during the save; taken by %s", before, after, takenBy)
			return
		}
	}
	t.Fatalf("snapshot taken by %q, which is no node of the cluster", takenBy)
}

func TestCLISnapshotInspectNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	notOurs := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notOurs, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectFailure(t, runCLI(t, "", "snapshot", "inspect", notOurs), notOurs, "not a raftcron snapshot file")
	expectFailure(t, runCLI(t, "", "snapshot", "inspect", filepath.Join(dir, "missing.snap")), "no such file")
	if r := runCLI(t, "", "snapshot", "inspect"); r.Code != ExitUsage {
		t.Fatalf("inspect without FILE: %s, want a usage error", r)
	}
}

func flipByte(data []byte, at int) []byte {
	out := append([]byte(nil), data...)
	out[at] ^= 0xff
	return out
}

// forceServer refuses a restore unless its first message sets force, as a
// cluster that bootstrapped its ACLs after the file was taken does.
type forceServer struct {
	pb.UnimplementedSnapshotServiceServer
}

func (forceServer) RestoreSnapshot(stream pb.SnapshotService_RestoreSnapshotServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	if !first.GetForce() {
		return status.Error(codes.FailedPrecondition, "the snapshot file was taken before this cluster bootstrapped its ACLs: set force")
	}
	return stream.SendAndClose(&pb.RestoreSnapshotResponse{Index: 9, Jobs: 1, KeptLiveState: true})
}

// snapshot restore --force sends force, and without it the refusal reaches
// the operator.
func TestCLISnapshotRestoreForce(t *testing.T) {
	dir := t.TempDir()
	f := fsm.New()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &body}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "old.snap")
	var file bytes.Buffer
	if _, err := backup.Write(&file, &pb.BackupHeader{Index: 3, Term: 1, NodeId: "n1", Size: uint64(body.Len())}, &body); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveFake(t, func(gs *grpc.Server) { pb.RegisterSnapshotServiceServer(gs, forceServer{}) })
	expectFailure(t, runCLI(t, "", "snapshot", "restore", path, "--addr", addr), "bootstrapped its ACLs")
	r := expectOK(t, runCLI(t, "", "snapshot", "restore", path, "--force", "--addr", addr))
	if !strings.Contains(r.Stdout, "ACL tokens and audit trail kept") {
		t.Fatalf("forced restore output %q", r.Stdout)
	}
}

type bufSink struct{ *bytes.Buffer }

func (bufSink) ID() string    { return "buf" }
func (bufSink) Close() error  { return nil }
func (bufSink) Cancel() error { return nil }
