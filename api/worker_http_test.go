package api

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// workerCalls are the HTTP protocol's calls, each with a valid request.
func workerCalls(c pb.WorkerServiceClient) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"PollAttempts": func(ctx context.Context) error {
			_, err := c.PollAttempts(ctx, &pb.PollAttemptsRequest{Id: "w1", Pool: "batch", Handlers: []string{"charge"}, Wait: durationpb.New(0)})
			return err
		},
		"HeartbeatAttempt": func(ctx context.Context) error {
			_, err := c.HeartbeatAttempt(ctx, &pb.HeartbeatAttemptRequest{RunId: "charge-7", Token: 7})
			return err
		},
		"CompleteAttempt": func(ctx context.Context) error {
			_, err := c.CompleteAttempt(ctx, &pb.CompleteAttemptRequest{RunId: "charge-7", Token: 7, Outcome: "succeeded"})
			return err
		},
		// A batch answers what the hub said of each outcome in its result:
		// the hub's refusal comes back as the call's error here.
		"BatchCompleteAttempts": func(ctx context.Context) error {
			resp, err := c.BatchCompleteAttempts(ctx, &pb.BatchCompleteAttemptsRequest{Outcomes: []*pb.CompleteAttemptRequest{
				{RunId: "charge-7", Token: 7, Outcome: "succeeded"},
			}})
			if err != nil {
				return err
			}
			if msg := resp.GetResults()[0].GetError(); msg != "" {
				return status.Error(status.Code(errWorkerServed), msg)
			}
			return nil
		},
	}
}

// The HTTP protocol's calls need role worker or management: without a
// token they are Unauthenticated, with a read or write token refused
// naming the role, and a worker or management token reaches the hub.
func TestWorkerCallsNeedTheWorkerRole(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	write := h.token(t, mgmt, "writer", pb.AclRole_ACL_ROLE_WRITE, nil)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)
	for name, call := range workerCalls(h.worker) {
		t.Run(name, func(t *testing.T) {
			wantCode(t, call(ctx), codes.Unauthenticated)
			for _, tok := range []string{read, write} {
				if st := wantCode(t, call(with(ctx, tok)), codes.PermissionDenied); !strings.Contains(st.Message(), "role worker") {
					t.Fatalf("message %q should name the role needed", st.Message())
				}
			}
			for _, tok := range []string{worker, mgmt} {
				if err := call(with(ctx, tok)); status.Code(err) != status.Code(errWorkerServed) {
					t.Fatalf("%v, want the call let through to the worker hub", err)
				}
			}
		})
	}
}

// A poll is granted its token's pools and cap, as a stream is.
func TestPollIsGrantedItsTokensBindings(t *testing.T) {
	hub := fakeWorkerHub{grants: make(chan remote.Grant, 1)}
	h := newACLHarnessWith(t, true, hub)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	created, err := h.acl.CreateAclToken(with(ctx, mgmt), &pb.CreateAclTokenRequest{
		Name: "payments-worker", Role: pb.AclRole_ACL_ROLE_WORKER, Pools: []string{"payments"}, MaxConcurrency: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(with(ctx, created.GetSecret()))
	defer cancel()
	go func() {
		_, _ = h.worker.PollAttempts(pctx, &pb.PollAttemptsRequest{Id: "w1", Pool: "payments", Handlers: []string{"charge"}})
	}()
	got := <-hub.grants
	if got.Token != created.GetToken().GetAccessorId() || !slices.Equal(got.Pools, []string{"payments"}) || got.MaxConcurrency != 4 {
		t.Fatalf("grant %+v, want the token's pools and cap", got)
	}
}

// A long poll ends as its token is deleted, within a second, like a
// stream of the token.
func TestDeletingATokenEndsItsPolls(t *testing.T) {
	hub := fakeWorkerHub{grants: make(chan remote.Grant, 1)}
	h := newACLHarnessWith(t, true, hub)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)
	ended := make(chan error, 1)
	go func() {
		_, err := h.worker.PollAttempts(with(ctx, worker), &pb.PollAttemptsRequest{Id: "w1", Pool: "batch", Handlers: []string{"charge"}})
		ended <- err
	}()
	<-hub.grants // the poll reached the hub
	if _, err := h.acl.DeleteAclToken(with(ctx, mgmt), &pb.DeleteAclTokenRequest{AccessorId: h.accessorOf(t, mgmt, "worker-1")}); err != nil {
		t.Fatal(err)
	}
	wantEnded(t, "the poll of the deleted worker token", ended, "ACL token deleted")
}

// fieldsOf are the fields a BadRequest names.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("%v, want InvalidArgument", err)
	}
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	return fields
}

// Every field of a bad request is named, and nothing reaches the hub.
func TestWorkerCallsNameTheFieldsAtFault(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	_, err := h.worker.PollAttempts(ctx, &pb.PollAttemptsRequest{
		Id: "W 1", Tags: map[string]string{"a b": "c"}, Handlers: []string{"ok", "not ok"}, Max: 1001,
		Wait: durationpb.New(2 * time.Minute),
	})
	if got, want := fieldsOf(t, err), []string{"id", "pool", "tags", "handlers[1]", "max", "wait"}; !slices.Equal(got, want) {
		t.Fatalf("poll fields %v, want %v", got, want)
	}
	_, err = h.worker.PollAttempts(ctx, &pb.PollAttemptsRequest{Id: "w1", Pool: "batch"})
	if got := fieldsOf(t, err); !slices.Equal(got, []string{"handlers"}) {
		t.Fatalf("poll without handlers: fields %v, want handlers", got)
	}
	over, long := uint32(101), strings.Repeat("x", remote.MaxProgressMessage+1)
	_, err = h.worker.HeartbeatAttempt(ctx, &pb.HeartbeatAttemptRequest{Progress: &over, Message: &long})
	if got, want := fieldsOf(t, err), []string{"run_id", "token", "progress", "message"}; !slices.Equal(got, want) {
		t.Fatalf("heartbeat fields %v, want %v", got, want)
	}
	_, err = h.worker.CompleteAttempt(ctx, &pb.CompleteAttemptRequest{RunId: "r-1", Token: 1, Outcome: "SUCCEEDED",
		Detail: strings.Repeat("x", maxOutcomeDetail+1)})
	if got, want := fieldsOf(t, err), []string{"outcome", "detail"}; !slices.Equal(got, want) {
		t.Fatalf("complete fields %v, want %v", got, want)
	}
	_, err = h.worker.BatchCompleteAttempts(ctx, &pb.BatchCompleteAttemptsRequest{Outcomes: []*pb.CompleteAttemptRequest{
		{RunId: "r-1", Token: 1, Outcome: "succeeded"}, {Outcome: "done"}, {RunId: "r-3", Token: 3, Outcome: "failed"},
	}})
	if got, want := fieldsOf(t, err), []string{"outcomes[1].run_id", "outcomes[1].token", "outcomes[1].outcome"}; !slices.Equal(got, want) {
		t.Fatalf("batch fields %v, want %v", got, want)
	}
	for _, n := range []int{0, remote.MaxPollOffers + 1} {
		outcomes := make([]*pb.CompleteAttemptRequest, n)
		for i := range outcomes {
			outcomes[i] = &pb.CompleteAttemptRequest{RunId: "r-1", Token: uint64(i + 1), Outcome: "succeeded"}
		}
		_, err = h.worker.BatchCompleteAttempts(ctx, &pb.BatchCompleteAttemptsRequest{Outcomes: outcomes})
		if got := fieldsOf(t, err); !slices.Equal(got, []string{"outcomes"}) {
			t.Fatalf("a batch of %d: fields %v, want outcomes", n, got)
		}
	}
}

// judgingHub takes the outcomes of run "taken", calls those of run "lost"
// superseded, refuses others, and records what it was given.
type judgingHub struct {
	fakeWorkerHub
	leader *fakeLeaderInfo
	got    *[]*pb.WorkerOutcome
}

func (h judgingHub) Complete(_ remote.Grant, o *pb.WorkerOutcome) error {
	*h.got = append(*h.got, o)
	switch o.GetRunId() {
	case "taken":
		return nil
	case "lost":
		return remote.Superseded(remote.WhyLeaseExpired, "its lease ran out")
	case "stepped-down":
		h.leader.leading = false
		return remote.Superseded(remote.WhyNotHeld, "the hub let go of it")
	}
	return status.Error(codes.PermissionDenied, "offered to a worker of another ACL token")
}

// Each outcome of a batch reaches the hub, in order, and gets the answer
// CompleteAttempt would have given it as its own result.
func TestBatchCompleteAnswersEachOutcome(t *testing.T) {
	var got []*pb.WorkerOutcome
	leader := &fakeLeaderInfo{leading: true}
	svc := NewWorkerService(Deps{Workers: judgingHub{leader: leader, got: &got}, Leader: leader})
	resp, err := svc.BatchCompleteAttempts(testCtx(t), &pb.BatchCompleteAttemptsRequest{Outcomes: []*pb.CompleteAttemptRequest{
		{RunId: "taken", Token: 1, Outcome: "succeeded"},
		{RunId: "lost", Token: 2, Outcome: "failed", ExitCode: 2},
		{RunId: "other", Token: 3, Outcome: "fenced"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []*pb.CompleteResult{{Taken: true}, {Superseded: remote.WhyLeaseExpired}, {Error: "offered to a worker of another ACL token"}}
	if len(resp.GetResults()) != len(want) {
		t.Fatalf("results %v, want %v", resp.GetResults(), want)
	}
	for i, r := range resp.GetResults() {
		if !proto.Equal(r, want[i]) {
			t.Errorf("result %d: %v, want %v", i, r, want[i])
		}
	}
	if len(got) != 3 || got[1].GetState() != pb.RunState_RUN_STATE_FAILED || got[1].GetDetail() != "exit code 2" || got[2].GetToken() != 3 {
		t.Fatalf("the hub got %v, want the three outcomes in order", got)
	}
}

// A leader that steps down during a batch answers NOT_LEADER for all of
// it: its hub's not_held would make the worker drop outcomes the next
// leader still waits for.
func TestBatchCompleteAcrossAStepDownIsNotLeader(t *testing.T) {
	var got []*pb.WorkerOutcome
	leader := &fakeLeaderInfo{leading: true, id: "n2", addr: "127.0.0.2:7001"}
	svc := NewWorkerService(Deps{Workers: judgingHub{leader: leader, got: &got}, Leader: leader})
	_, err := svc.BatchCompleteAttempts(testCtx(t), &pb.BatchCompleteAttemptsRequest{Outcomes: []*pb.CompleteAttemptRequest{
		{RunId: "taken", Token: 1, Outcome: "succeeded"}, {RunId: "stepped-down", Token: 2, Outcome: "succeeded"},
	}})
	leaderAddressOf(t, err)
}

// An outcome's wire name is the run state; an exit code joins the detail.
func TestCompletionsTakeTheirOutcome(t *testing.T) {
	for _, tc := range []struct {
		req    *pb.CompleteAttemptRequest
		state  pb.RunState
		detail string
	}{
		{&pb.CompleteAttemptRequest{Outcome: "succeeded"}, pb.RunState_RUN_STATE_SUCCEEDED, ""},
		{&pb.CompleteAttemptRequest{Outcome: "failed", ExitCode: 3}, pb.RunState_RUN_STATE_FAILED, "exit code 3"},
		{&pb.CompleteAttemptRequest{Outcome: "failed", ExitCode: 3, Detail: "boom"}, pb.RunState_RUN_STATE_FAILED, "boom; exit code 3"},
		{&pb.CompleteAttemptRequest{Outcome: "fenced"}, pb.RunState_RUN_STATE_FENCED, ""},
		{&pb.CompleteAttemptRequest{Outcome: "deadline_exceeded"}, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, ""},
		{&pb.CompleteAttemptRequest{Outcome: "cancelled"}, pb.RunState_RUN_STATE_CANCELLED, ""},
	} {
		tc.req.RunId, tc.req.Token, tc.req.Output = "r-1", 9, "tail"
		o, err := checkCompletion(tc.req)
		if err != nil || o.GetState() != tc.state || o.GetDetail() != tc.detail || string(o.GetOutput()) != "tail" || o.GetToken() != 9 {
			t.Errorf("%v: %v %v, want %v %q", tc.req, o, err, tc.state, tc.detail)
		}
	}
}

// recordingHub answers every call and records that it came.
type recordingHub struct {
	fakeWorkerHub
	calls chan string
}

func (h recordingHub) Complete(remote.Grant, *pb.WorkerOutcome) error {
	h.calls <- "complete"
	return nil
}

// leaderAt is a Leadership whose leader serves conn.
type leaderAt struct{ conn *grpc.ClientConn }

func (leaderAt) IsLeader() bool                          { return false }
func (l leaderAt) LeaderConn() (*grpc.ClientConn, error) { return l.conn, nil }

// A follower forwards an HTTP worker's call to the leader once: the
// leader's hub takes it; a call forwarded already is answered NOT_LEADER.
func TestFollowerForwardsWorkerCallsOnce(t *testing.T) {
	calls := make(chan string, 1)
	leader := grpc.NewServer()
	pb.RegisterWorkerServiceServer(leader, NewWorkerService(Deps{
		Workers: recordingHub{calls: calls}, Leader: &fakeLeaderInfo{leading: true},
	}))
	lis := bufconn.Listen(1 << 16)
	go func() { _ = leader.Serve(lis) }()
	t.Cleanup(leader.Stop)
	conn, err := grpc.NewClient("passthrough:///leader",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	follower := NewWorkerService(Deps{Workers: fakeWorkerHub{}, Leader: &fakeLeaderInfo{}, Leadership: leaderAt{conn}})
	req := &pb.CompleteAttemptRequest{RunId: "r-1", Token: 9, Outcome: "succeeded"}
	if _, err := follower.CompleteAttempt(testCtx(t), req); err != nil {
		t.Fatalf("forwarded complete: %v", err)
	}
	if got := <-calls; got != "complete" {
		t.Fatalf("leader's hub got %q", got)
	}
	forwarded := metadata.NewIncomingContext(testCtx(t), metadata.Pairs(ForwardedKey, "1"))
	if _, err := follower.CompleteAttempt(forwarded, req); leaderAddressOf(t, err) != "" {
		t.Fatalf("a call forwarded twice: %v, want NOT_LEADER", err)
	}
}
