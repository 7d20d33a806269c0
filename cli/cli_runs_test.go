package cli

// The run-side commands against a real gRPC server in this process: the
// api services over a real FSM, with a stand-in for the leader's scheduler
// that commits manual runs straight into the FSM (nothing is dispatched).

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/syncbuf"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// localRaft applies commands to the FSM in log order, as a one-node Raft
// whose reads are always linearizable. Like the leader, it stamps the
// clients' commands (those that come without a time).
type localRaft struct {
	state *fsm.FSM
	mu    sync.Mutex // serializes Apply, like Raft's log
	index uint64
}

func (l *localRaft) Apply(_ context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	if cmd.GetProposedAtUnixNano() == 0 {
		cmd.ProposedAtUnixNano = time.Now().UnixNano()
	}
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index++
	return l.state.Apply(&raft.Log{Index: l.index, Term: 1, Type: raft.LogCommand, Data: data}).(*pb.CommandResult), nil
}

func (l *localRaft) ReadBarrier(context.Context) error { return nil }

// Trigger commits a manual fire, as the leader's scheduler would.
func (l *localRaft) Trigger(ctx context.Context, run *pb.Fire) (*pb.FireResult, error) {
	job, err := l.state.Job(run.GetJob())
	if err != nil {
		return nil, err
	}
	run.Generation, run.Kind = job.GetGeneration(), pb.FireKind_FIRE_KIND_MANUAL
	res, err := l.Apply(ctx, &pb.Command{ProposedAtUnixNano: time.Now().UnixNano(), Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: "n1", Term: 1, Fires: []*pb.Fire{run},
	}}})
	if err != nil {
		return nil, err
	}
	return res.GetFires()[0], nil
}

// complete commits the outcome of a run's current attempt.
func (l *localRaft) complete(t *testing.T, runID string, token uint64, outcome pb.RunState) {
	t.Helper()
	now := time.Now().UnixNano()
	res, err := l.Apply(context.Background(), &pb.Command{ProposedAtUnixNano: now, Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
		Completions: []*pb.Completion{{RunId: runID, Token: token, Outcome: outcome, StartedAtUnixNano: now, FinishedAtUnixNano: now, Detail: "HTTP 200"}},
	}}})
	if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("complete %s: %v %v", runID, res, err)
	}
}

type runServer struct {
	addr string
	raft *localRaft
	hub  *api.RunHub
}

func startRunServer(t *testing.T) *runServer {
	t.Helper()
	s := &runServer{raft: &localRaft{state: fsm.New()}, hub: api.NewRunHub()}
	// The rules of this build, as a cluster of it applies them once its
	// first leader raised the cluster version.
	if _, err := s.raft.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	s.raft.state.SetObserver(s.hub)
	gs := grpc.NewServer()
	audit := api.NewAuditSwitch(s.raft, s.raft.state, api.DefaultAuditLimit, nil, nil)
	d := api.Deps{
		Store: s.raft, Registry: s.raft.state, Ledger: s.raft.state, AuditLog: s.raft.state,
		Hub: s.hub, Triggerer: s.raft, Audit: audit, Chains: s.raft.state,
	}
	api.Register(gs, api.Services{
		Jobs: api.NewJobService(d), Cluster: api.NewClusterService(d), Runs: api.NewRunService(d),
		Fence: api.NewFenceService(d), Audit: api.NewAuditService(d), Chains: api.NewChainService(d),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(ln)
	}()
	t.Cleanup(func() {
		s.hub.Close()
		gs.Stop()
		<-served
	})
	s.addr = ln.Addr().String()
	return s
}

// cli runs one command line in this process against the server.
func (s *runServer) cli(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append(args, "--addr", s.addr), strings.NewReader(stdin), &out, &errOut)
	return cliResult{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

func TestCLIRunCommands(t *testing.T) {
	t.Parallel()
	s := startRunServer(t)
	expectOK(t, s.cli(t, nightlyJob, "job", "apply", "-f", "-"))
	const job = "nightly-billing"

	t.Run("an empty ledger", func(t *testing.T) {
		r := expectOK(t, s.cli(t, "", "run", "list"))
		if rows := tableRows(r.Stdout); len(rows) != 1 || strings.Join(rows[0], "\t") != runHeader {
			t.Fatalf("empty list: %q", r.Stdout)
		}
		r = expectOK(t, s.cli(t, "", "run", "list", "-o", "json"))
		if strings.TrimSpace(r.Stdout) != "[]" {
			t.Fatalf("empty list as JSON: %q", r.Stdout)
		}
	})

	t.Run("trigger is idempotent by request id", func(t *testing.T) {
		r := expectOK(t, s.cli(t, "", "job", "trigger", job, "--request-id", "deploy-1"))
		want := "job nightly-billing triggered: run nightly-billing-1, token 1, attempt 1 (dispatched)\n"
		if r.Stdout != want {
			t.Fatalf("trigger: %q, want %q", r.Stdout, want)
		}
		r = expectOK(t, s.cli(t, "", "job", "trigger", job, "--request-id", "deploy-1"))
		if r.Stdout != want {
			t.Fatalf("trigger again with the same id: %q, want the first run", r.Stdout)
		}
	})

	t.Run("fence check", func(t *testing.T) {
		r := expectOK(t, s.cli(t, "", "fence", "check", "--job", job, "--token", "1"))
		if r.Stdout != "current (latest token 1)\n" {
			t.Fatalf("token 1: %q", r.Stdout)
		}
		// Overlap skip: the next manual run waits for the first to finish.
		s.raft.complete(t, "nightly-billing-1", 1, pb.RunState_RUN_STATE_SUCCEEDED)
		r = expectOK(t, s.cli(t, "", "job", "trigger", job))
		if !strings.Contains(r.Stdout, "run nightly-billing-2, token 2") {
			t.Fatalf("second trigger: %q", r.Stdout)
		}
		expectFailure(t, s.cli(t, "", "fence", "check", "--job", job, "--token", "1"), "stale: latest token is 2")
		r = s.cli(t, "", "fence", "check", "--job", job, "--token", "1", "-o", "json")
		var res fenceResult
		if r.Code != ExitFailure || json.Unmarshal([]byte(r.Stdout), &res) != nil || res.Current || res.LatestToken != 2 {
			t.Fatalf("stale as JSON: %s", r)
		}
		expectFailure(t, s.cli(t, "", "fence", "check", "--job", "nope", "--token", "1"), `job "nope" not found`)
		if r := s.cli(t, "", "fence", "check", "--job", job); r.Code != ExitUsage || !strings.Contains(r.Stderr, "--token") {
			t.Fatalf("no --token: %s", r)
		}
	})

	t.Run("run list and get", func(t *testing.T) {
		rows := tableRows(expectOK(t, s.cli(t, "", "run", "list", "--job", job)).Stdout)
		if len(rows) != 3 || rows[1][0] != "nightly-billing-2" || rows[2][0] != "nightly-billing-1" ||
			rows[2][4] != "succeeded" || rows[2][3] != "manual" || rows[2][6] != "1" {
			t.Fatalf("run list: %q", rows)
		}
		if rows := tableRows(expectOK(t, s.cli(t, "", "run", "list", "--limit", "1")).Stdout); len(rows) != 2 {
			t.Fatalf("--limit 1: %q", rows)
		}
		r := expectOK(t, s.cli(t, "", "run", "get", "nightly-billing-1", "-o", "json"))
		var v runView
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
			t.Fatal(err)
		}
		if v.State != "succeeded" || v.RequestID != "deploy-1" || len(v.Attempts) != 1 || v.Attempts[0].NodeID != "n1" ||
			v.Attempts[0].Detail != "HTTP 200" || !strings.HasSuffix(v.CreatedAt, "Z") {
			t.Fatalf("run get json: %s", r.Stdout)
		}
		expectFailure(t, s.cli(t, "", "run", "get", "nightly-billing-99"), `run "nightly-billing-99" not found`)
	})

	t.Run("job get shows status", func(t *testing.T) {
		r := expectOK(t, s.cli(t, "", "job", "get", job))
		blocks := strings.Split(r.Stdout, "\n\n")
		if len(blocks) != 2 {
			t.Fatalf("job get: %q", r.Stdout)
		}
		row := tableRows(blocks[1])[1]
		if row[1] != "nightly-billing-1" || !strings.HasPrefix(row[2], "succeeded at ") || row[3] != "1" || row[6] != "1" || row[7] != "2" {
			t.Fatalf("status row %q", row)
		}
		if _, err := time.Parse(time.RFC3339, row[0]); err != nil {
			t.Fatalf("NEXT FIRE %q: %v", row[0], err)
		}
		yaml := expectOK(t, s.cli(t, "", "job", "get", job, "-o", "yaml")).Stdout
		if strings.Contains(yaml, "token") || strings.Contains(yaml, "status") {
			t.Fatalf("job file carries status: %q", yaml)
		}
		r = expectOK(t, s.cli(t, yaml, "job", "apply", "-f", "-"))
		if r.Stdout != "job nightly-billing unchanged (version 1)\n" {
			t.Fatalf("round trip after runs: %q", r.Stdout)
		}
		var st jobStatusView
		r = expectOK(t, s.cli(t, "", "job", "status", job, "-o", "json"))
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.LatestToken != 2 || st.Succeeded != 1 ||
			len(st.OpenRunIDs) != 1 || st.NextFire == "" {
			t.Fatalf("job status json: %s %v", r.Stdout, err)
		}
	})

	t.Run("a paused job needs --force", func(t *testing.T) {
		s.raft.complete(t, "nightly-billing-2", 2, pb.RunState_RUN_STATE_FAILED)
		expectOK(t, s.cli(t, "", "job", "pause", job))
		expectFailure(t, s.cli(t, "", "job", "trigger", job), `job "nightly-billing" is paused: pass --force`)
		r := expectOK(t, s.cli(t, "", "job", "trigger", job, "--force", "-o", "yaml"))
		if !strings.Contains(r.Stdout, "kind: manual") || !strings.Contains(r.Stdout, "token: 3") {
			t.Fatalf("forced trigger yaml: %q", r.Stdout)
		}
		expectOK(t, s.cli(t, "", "job", "resume", job))
	})

	t.Run("overlap refusal", func(t *testing.T) {
		// Run 3 is still open and the job's overlap policy is skip.
		expectFailure(t, s.cli(t, "", "job", "trigger", job), "overlap_skipped")
	})

	t.Run("trigger of a missing job", func(t *testing.T) {
		expectFailure(t, s.cli(t, "", "job", "trigger", "nope"), `job "nope" not found`)
	})
}

func TestCLIRunWatch(t *testing.T) {
	t.Parallel()
	s := startRunServer(t)
	expectOK(t, s.cli(t, nightlyJob, "job", "apply", "-f", "-"))
	expectOK(t, s.cli(t, strings.Replace(nightlyJob, "nightly-billing", "other", 1), "job", "apply", "-f", "-"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncbuf.Buffer{}
	var errOut bytes.Buffer
	done := make(chan error, 1)
	go func() {
		root := NewRoot("test", strings.NewReader(""), out, &errOut)
		root.SetArgs([]string{"run", "watch", "--job", "nightly-billing", "--addr", s.addr})
		done <- root.ExecuteContext(ctx)
	}()
	testutil.WaitFor(t, 10*time.Second, "the watch to subscribe", func() bool { return s.hub.Watchers() == 1 })

	expectOK(t, s.cli(t, "", "job", "trigger", "other"))
	expectOK(t, s.cli(t, "", "job", "trigger", "nightly-billing"))
	s.raft.complete(t, "nightly-billing-2", 2, pb.RunState_RUN_STATE_SUCCEEDED)
	testutil.WaitFor(t, 10*time.Second, "two watched changes", func() bool { return strings.Count(out.String(), "\n") >= 2 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch ended with %v after Ctrl-C", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end when its context did")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "nightly-billing-2 job=nightly-billing ") || !strings.Contains(lines[0], "state=dispatched") ||
		!strings.HasPrefix(lines[1], "nightly-billing-2 ") || !strings.Contains(lines[1], "state=succeeded") {
		t.Fatalf("watched lines (only nightly-billing, in order):\n%s", out.String())
	}

	t.Run("--timeout bounds the watch", func(t *testing.T) {
		start := time.Now()
		r := s.cli(t, "", "run", "watch", "--timeout", "300ms")
		if r.Code != ExitOK || r.Stderr != "" {
			t.Fatalf("watch with --timeout: %s", r)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 10*time.Second {
			t.Fatalf("watch with --timeout 300ms took %s", took)
		}
	})
	t.Run("the node ends the watch", func(t *testing.T) {
		s.hub.Close()
		expectFailure(t, s.cli(t, "", "run", "watch"), "shutting down")
	})
}

func TestCLIJobNext(t *testing.T) {
	t.Parallel()
	s := startRunServer(t)
	r := expectOK(t, s.cli(t, "", "job", "next", "--schedule", "30 2 * * *", "--timezone", "Europe/Berlin",
		"--after", "2026-03-28T12:00:00Z", "--count", "2"))
	rows := tableRows(r.Stdout)
	want := "FIRE TIME (UTC)|FIRE TIME (Europe/Berlin)\n" +
		"2026-03-29T01:00:00Z|2026-03-29T03:00:00+02:00\n" +
		"2026-03-30T00:30:00Z|2026-03-30T02:30:00+02:00"
	var got []string
	for _, row := range rows {
		got = append(got, strings.Join(row, "|"))
	}
	if strings.Join(got, "\n") != want {
		t.Fatalf("inline next:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	expectFailure(t, s.cli(t, "", "job", "next", "--schedule", "61 * * * *"), `invalid schedule "61 * * * *": schedule:`)
	expectFailure(t, s.cli(t, "", "job", "next", "--schedule", "@daily", "--timezone", "Mars/Base"), "timezone:")
	expectFailure(t, s.cli(t, "", "job", "next", "nightly-billing"), `job "nightly-billing" not found`)

	expectOK(t, s.cli(t, nightlyJob, "job", "apply", "-f", "-"))
	r = expectOK(t, s.cli(t, "", "job", "next", "nightly-billing", "--count", "3", "-o", "json"))
	var times []string
	if err := json.Unmarshal([]byte(r.Stdout), &times); err != nil || len(times) != 3 {
		t.Fatalf("job next json: %q %v", r.Stdout, err)
	}
	for _, ts := range times {
		at, err := time.Parse(time.RFC3339, ts)
		if err != nil || at.In(berlin(t)).Hour() != 2 || !at.After(time.Now()) {
			t.Fatalf("fire time %q is not a future 02:00 in Berlin", ts)
		}
	}
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
