package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/scheduler/remote"
	"github.com/raftcron/raftcron/worker"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	succeeded = pb.RunState_RUN_STATE_SUCCEEDED
	failed    = pb.RunState_RUN_STATE_FAILED
)

func handler(name, payload string) *pb.WorkerTarget {
	return &pb.WorkerTarget{Pool: "batch", Handler: name, Payload: payload}
}

func TestHandlerGetsTheRun(t *testing.T) {
	n := newNode(t, 10*time.Second)
	runs := make(chan worker.Run, 1)
	startWorker(t, worker.Config{Addrs: []string{n.addr}}, map[string]worker.HandlerFunc{
		"charge": func(_ context.Context, r worker.Run) error { runs <- r; return nil },
	})
	a := n.submit(context.Background(), handler("charge", `{"mode":"full"}`), 0)
	if o := n.got.wait(t, a); o.State != succeeded || o.Detail != "worker w1: handler charge succeeded" {
		t.Fatalf("outcome %+v, want SUCCEEDED", o)
	}
	r := <-runs
	want := worker.Run{Job: "billing", RunID: a.RunID, ScheduledAt: a.ScheduledAt, Attempt: 1, Token: a.Token,
		IdempotencyKey: "billing/2026-11-22T01:02:03Z", Payload: `{"mode":"full"}`, Worker: "w1"}
	if worker.Plain(r) != want {
		t.Fatalf("run %+v, want %+v", r, want)
	}
	if f := r.Fence(); f.Token != a.Token || f.IdempotencyKey != want.IdempotencyKey || !f.ScheduledAt.Equal(a.ScheduledAt) {
		t.Fatalf("fence run %+v", f)
	}
}

func TestHandlerOutcomes(t *testing.T) {
	n := newNode(t, 10*time.Second)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	startWorker(t, worker.Config{Addrs: []string{n.addr}, Concurrency: 8}, map[string]worker.HandlerFunc{
		"fail": func(context.Context, worker.Run) error { return errors.New("card declined") },
		"stale": func(context.Context, worker.Run) error {
			return &fence.StaleError{Scope: "billing", Token: 1, Highest: 2}
		},
		"panic": func(context.Context, worker.Run) error { panic("boom") },
		"stuck": func(context.Context, worker.Run) error { <-release; return nil }, // ignores its context
	})
	for _, tc := range []struct {
		handler  string
		deadline time.Duration
		state    pb.RunState
		detail   string
	}{
		{"fail", 0, failed, "card declined"},
		{"stale", 0, pb.RunState_RUN_STATE_FENCED, "stale"},
		{"panic", 0, failed, "handler panic panicked: boom"},
		{"stuck", 200 * time.Millisecond, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, "deadline 200ms exceeded"},
	} {
		start := time.Now()
		o := n.got.wait(t, n.submit(context.Background(), handler(tc.handler, ""), tc.deadline))
		if o.State != tc.state || !strings.Contains(o.Detail, tc.detail) {
			t.Errorf("handler %s: %v %q, want %v saying %q", tc.handler, o.State, o.Detail, tc.state, tc.detail)
		}
		if tc.deadline > 0 && time.Since(start) > 5*time.Second {
			t.Errorf("handler %s: reported after %s, want about its deadline", tc.handler, time.Since(start))
		}
	}
}

func TestHandlerOnlyGoesToWorkersThatRegisteredIt(t *testing.T) {
	n := newNode(t, 10*time.Second)
	startWorker(t, worker.Config{Addrs: []string{n.addr}}, map[string]worker.HandlerFunc{
		"charge": func(context.Context, worker.Run) error { return nil },
	})
	// w1 is connected once it has run something.
	if o := n.got.wait(t, n.submit(context.Background(), handler("charge", ""), 0)); o.State != succeeded {
		t.Fatalf("charge: %+v", o)
	}
	a := n.submit(context.Background(), handler("refund", ""), 0)
	startWorker(t, worker.Config{ID: "w2", Addrs: []string{n.addr}}, map[string]worker.HandlerFunc{
		"refund": func(context.Context, worker.Run) error { return nil },
	})
	if o := n.got.wait(t, a); o.State != succeeded || !strings.HasPrefix(o.Detail, "worker w2:") {
		t.Fatalf("outcome %+v, want SUCCEEDED on w2, the one worker with the handler", o)
	}
}

func TestCancelledRunCancelsTheHandler(t *testing.T) {
	n := newNode(t, 10*time.Second)
	cause, started := make(chan error, 1), make(chan struct{}, 1)
	startWorker(t, worker.Config{Addrs: []string{n.addr}}, map[string]worker.HandlerFunc{
		"wait": func(ctx context.Context, _ worker.Run) error {
			started <- struct{}{}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		},
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	a := n.submit(ctx, handler("wait", ""), 0)
	<-started
	cancel(errors.New("run cancelled by alice"))
	o := n.got.wait(t, a)
	if o.State != pb.RunState_RUN_STATE_CANCELLED || !strings.Contains(o.Detail, "run cancelled by alice") {
		t.Fatalf("outcome %+v, want CANCELLED with the cause", o)
	}
	select {
	case err := <-cause:
		if !strings.Contains(err.Error(), "run cancelled by alice") {
			t.Fatalf("handler's context ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
}

// A handler's progress reaches the leader: its latest report, a second at
// most after it, however often the handler reports.
func TestHandlerProgressReachesTheLeader(t *testing.T) {
	recs := make(chan *pb.ProgressRecord, 100)
	n := newNodeWith(t, remote.Config{Lease: 10 * time.Second, Progress: func(r *pb.ProgressRecord) { recs <- r }})
	release := make(chan struct{})
	startWorker(t, worker.Config{Addrs: []string{n.addr}}, map[string]worker.HandlerFunc{
		"charge": func(ctx context.Context, r worker.Run) error {
			for i := range 100 {
				r.Progress(i, fmt.Sprintf("card %d", i))
			}
			r.Progress(150, strings.Repeat("é", 200)) // beyond both bounds
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		},
	})
	a := n.submit(context.Background(), handler("charge", ""), 0)
	select {
	case r := <-recs:
		if r.GetToken() != a.Token || r.GetProgress() != 100 || len(r.GetMessage()) != 256 || !utf8.ValidString(r.GetMessage()) {
			t.Fatalf("record %v, want the last report, bounded: 100%%, 256 bytes of UTF-8", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress reached the leader within 5s")
	}
	select {
	case r := <-recs:
		t.Fatalf("a second record %v: the handler's reports were not coalesced", r)
	case <-time.After(1500 * time.Millisecond):
	}
	close(release)
	if o := n.got.wait(t, a); o.State != succeeded {
		t.Fatalf("outcome %+v", o)
	}
}

// A command runs only if the worker's own policy allows it, with the
// run's variables and the worker's ID in its environment.
func TestCommandsRunOnlyIfTheWorkerAllowsThem(t *testing.T) {
	n := newNode(t, 10*time.Second)
	startWorker(t, worker.Config{Addrs: []string{n.addr}, ExecAllow: []string{"/bin/s*"}, ExecUser: testutil.ExecUser()}, nil)
	cmd := func(argv ...string) *pb.WorkerTarget {
		return &pb.WorkerTarget{Pool: "batch", Command: argv, Env: map[string]string{"RAFTCRON_WORKER": "forged", "A": "b"}}
	}
	a := n.submit(context.Background(), cmd("/bin/sh", "-c",
		`echo "$RAFTCRON_WORKER $RAFTCRON_FENCING_TOKEN $RAFTCRON_IDEMPOTENCY_KEY $A $(pwd)"`), 0)
	o := n.got.wait(t, a)
	want := "w1 " + strconv.FormatUint(a.Token, 10) + " billing/2026-11-22T01:02:03Z b /\n"
	if o.State != succeeded || string(o.Output) != want {
		t.Fatalf("outcome %v %q, output %q; want SUCCEEDED printing %q", o.State, o.Detail, o.Output, want)
	}
	for _, argv := range [][]string{{"/usr/bin/env"}, {"sh", "-c", "true"}, {"/bin/../usr/bin/env"}} {
		o := n.got.wait(t, n.submit(context.Background(), cmd(argv...), 0))
		if o.State != failed || o.Reason != dispatch.ReasonExecDenied ||
			!strings.Contains(o.Detail, "exec denied: command[0] "+strconv.Quote(argv[0])) {
			t.Errorf("%v: %v (reason %q) %q, want FAILED exec_denied, as a node's refusal: never retried",
				argv, o.State, o.Reason, o.Detail)
		}
	}
	timeout := cmd("/bin/sleep", "30")
	timeout.Timeout = durationpb.New(100 * time.Millisecond)
	if o := n.got.wait(t, n.submit(context.Background(), timeout, 0)); o.State != failed || !strings.Contains(o.Detail, "timeout after 100ms") {
		t.Errorf("command past its timeout: %v %q", o.State, o.Detail)
	}
}

// A command's environment is its env and the run's variables alone, as a
// node's exec run's is, with the signature the leader made when the
// cluster signs its dispatches: a v2-only downstream verifies it as it
// would a node's.
func TestCommandsGetTheSignatureAndNoEnvironmentOfTheWorker(t *testing.T) {
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	n := newNodeWith(t, remote.Config{Lease: 10 * time.Second, Signer: dispatch.NewSigner(keys, nil)})
	t.Setenv("RAFTCRON_TEST_SECRET", "of the worker")
	startWorker(t, worker.Config{Addrs: []string{n.addr}, ExecAllow: []string{"/usr/bin/env"}, ExecUser: testutil.ExecUser()}, nil)
	a := n.submit(context.Background(), &pb.WorkerTarget{Pool: "batch", Command: []string{"/usr/bin/env"}, Env: map[string]string{"A": "b"}}, 0)
	o := n.got.wait(t, a)
	if o.State != succeeded {
		t.Fatalf("outcome %v %q", o.State, o.Detail)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(o.Output)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	run, err := fence.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.NewVerifier(keys).Verify(fence.ExecDispatch(run, nil), env[fence.EnvSignature]); err != nil {
		t.Fatalf("signature %q: %v, want v2 of the run-only form", env[fence.EnvSignature], err)
	}
	delete(env, fence.EnvSignature)
	for _, kv := range run.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		delete(env, k)
	}
	if len(env) != 2 || env["A"] != "b" || env[worker.EnvWorker] != "w1" {
		t.Fatalf("environment %v besides the run's, want A=b and %s=w1 alone", env, worker.EnvWorker)
	}
}

// A worker given a follower's address follows NOT_LEADER to the leader.
func TestWorkerFollowsTheLeader(t *testing.T) {
	leader := newNode(t, 10*time.Second)
	follower := newNode(t, 10*time.Second)
	follower.leader.set(false, leader.addr)
	startWorker(t, worker.Config{Addrs: []string{follower.addr}}, map[string]worker.HandlerFunc{
		"charge": func(context.Context, worker.Run) error { return nil },
	})
	if o := leader.got.wait(t, leader.submit(context.Background(), handler("charge", ""), 0)); o.State != succeeded {
		t.Fatalf("outcome %+v on the leader", o)
	}
}

// A NOT_LEADER answer is followed at once, not after the backoff: with
// backoffs of a minute, the worker still reaches the leader within the
// outcome's 10 s.
func TestWorkerFollowsTheLeaderWithoutWaiting(t *testing.T) {
	leader := newNode(t, 10*time.Second)
	follower := newNode(t, 10*time.Second)
	follower.leader.set(false, leader.addr)
	startWorker(t, worker.Config{Addrs: []string{follower.addr}, MinBackoff: time.Minute, MaxBackoff: time.Minute},
		map[string]worker.HandlerFunc{"charge": func(context.Context, worker.Run) error { return nil }})
	if o := leader.got.wait(t, leader.submit(context.Background(), handler("charge", ""), 0)); o.State != succeeded {
		t.Fatalf("outcome %+v on the leader", o)
	}
}

// When its node stops leading, the worker gives up what it runs (the
// leader re-dispatches it) and moves to the new leader.
func TestWorkerMovesToTheNewLeader(t *testing.T) {
	first := newNode(t, 10*time.Second)
	second := newNode(t, 10*time.Second)
	second.leader.set(false, first.addr)
	started, stopped := make(chan struct{}, 2), make(chan struct{}, 2)
	startWorker(t, worker.Config{Addrs: []string{first.addr, second.addr}}, map[string]worker.HandlerFunc{
		"wait": func(ctx context.Context, _ worker.Run) error {
			started <- struct{}{}
			<-ctx.Done()
			stopped <- struct{}{}
			return ctx.Err()
		},
	})
	a := first.submit(context.Background(), handler("wait", ""), 0)
	<-started
	first.leader.set(false, second.addr)
	second.leader.set(true, second.addr)
	if o := first.got.wait(t, a); !o.Lost {
		t.Fatalf("outcome %+v on the old leader, want lost", o)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler of the lost attempt was not cancelled")
	}
	b := second.submit(context.Background(), handler("wait", ""), 200*time.Millisecond)
	if o := second.got.wait(t, b); o.State != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED {
		t.Fatalf("outcome %+v on the new leader", o)
	}
}

// silentLeader welcomes a worker with a short lease, offers it one
// attempt, and then says nothing more.
type silentLeader struct {
	pb.UnimplementedWorkerServiceServer
	lease time.Duration
}

func (l silentLeader) Connect(stream pb.WorkerService_ConnectServer) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	if err := stream.Send(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Welcome{Welcome: &pb.WorkerWelcome{
		Lease: durationpb.New(l.lease)}}}); err != nil {
		return err
	}
	if err := stream.Send(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Offers{Offers: &pb.WorkerOffers{Attempts: []*pb.WorkerAttempt{{
		Job: "billing", RunId: "billing-1", Token: 1, Attempt: 1, Target: handler("wait", "")}}}}}); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			return err
		}
	}
}

// A worker that hears nothing from the leader for the lease gives its
// attempts up: the leader has re-dispatched them by then.
func TestSilentLeaderCostsTheWorkerItsLease(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterWorkerServiceServer(srv, silentLeader{lease: 300 * time.Millisecond})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	cause := make(chan error, 1)
	start := time.Now()
	startWorker(t, worker.Config{Addrs: []string{ln.Addr().String()}}, map[string]worker.HandlerFunc{
		"wait": func(ctx context.Context, _ worker.Run) error {
			<-ctx.Done()
			select { // it is offered again on every reconnection
			case cause <- context.Cause(ctx):
			default:
			}
			return nil
		},
	})
	select {
	case err := <-cause:
		if !strings.Contains(err.Error(), "nothing heard from the leader within the lease") || time.Since(start) < 300*time.Millisecond {
			t.Fatalf("handler's context ended after %s with %v, want the lease lost", time.Since(start), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler kept running with the leader silent")
	}
}

func TestConfigIsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  worker.Config
		want string
	}{
		{worker.Config{Pool: "batch", Addrs: []string{"127.0.0.1:7001"}}, `ID: "" must match`},
		{worker.Config{ID: "w1", Pool: "Batch", Addrs: []string{"127.0.0.1:7001"}}, `Pool: "Batch" must match`},
		{worker.Config{ID: "w1", Pool: "batch"}, "Addrs: at least one"},
		{worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"nohost"}}, `"nohost" is not host:port`},
		{worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, ExecAllow: []string{"bin/*"}}, `ExecAllow: pattern "bin/*": must be an absolute, clean path pattern`},
		{worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, ExecAllow: []string{"/bin/["}}, `ExecAllow: pattern "/bin/[": syntax error in pattern`},
		{worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, ExecEnvAllow: []string{"LD_["}}, `ExecEnvAllow: pattern "LD_[": syntax error in pattern`},
		{worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, Token: "s3cret"}, "Token: needs TLS"},
		{worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}, ExecUser: "no-such-user-raftcron"}, "ExecUser"},
	} {
		_, err := worker.New(tc.cfg)
		if !errors.Is(err, worker.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want ErrConfig saying %q", tc.cfg, err, tc.want)
		}
	}
	w, err := worker.New(worker.Config{ID: "w1", Pool: "batch", Addrs: []string{"h:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("bad name", func(context.Context, worker.Run) error { return nil }); !errors.Is(err, worker.ErrConfig) {
		t.Errorf("Handle with a bad name: %v", err)
	}
}

// What the leader refuses outright ends Run with the reason, rather than
// reconnecting forever.
func TestRefusedHelloEndsRun(t *testing.T) {
	t.Parallel()
	n := newNode(t, 10*time.Second)
	tags := map[string]string{}
	for i := range 65 {
		tags["t"+strconv.Itoa(i)] = "x"
	}
	w, err := worker.New(worker.Config{ID: "w1", Pool: "batch", Addrs: []string{n.addr}, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Run(ctx); err == nil || !strings.Contains(err.Error(), "hello.tags: at most 64") {
		t.Fatalf("Run = %v, want the refusal naming hello.tags", err)
	}
}
