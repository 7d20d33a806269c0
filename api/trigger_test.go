package api

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// errFakeNoLeader is what a node without a known leader answers.
var errFakeNoLeader error = &cluster.NoLeaderError{LeaderID: "n1", LeaderAddr: "127.0.0.1:7001"}

// triggerCall is one call the fake scheduler saw.
type triggerCall struct {
	name, requestID string
	force           bool
	forwarded       bool
	principal       string
	payload         string
	overlap         pb.Overlap
}

// fakeTriggerer answers like the FSM does for MANUAL fires: idempotent by
// request id, paused needs force, overlap refusal, gone.
type fakeTriggerer struct {
	store *fakeStore

	mu      sync.Mutex // guards everything below
	calls   []triggerCall
	byID    map[string]*pb.Run
	token   uint64
	overlap bool  // refuse as if a run were open under overlap skip
	err     error // returned instead of triggering
}

func newFakeTriggerer(s *fakeStore) *fakeTriggerer {
	return &fakeTriggerer{store: s, byID: map[string]*pb.Run{}}
}

func (f *fakeTriggerer) Trigger(ctx context.Context, run *pb.Fire) (*pb.FireResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name, requestID, force := run.GetJob(), run.GetRequestId(), run.GetForce()
	f.calls = append(f.calls, triggerCall{name: name, requestID: requestID, force: force, forwarded: isForwarded(ctx),
		principal: run.GetPrincipal(), payload: run.GetPayload(), overlap: run.GetOverlap()})
	if f.err != nil {
		return nil, f.err
	}
	job, err := f.store.Job(name)
	switch {
	case err != nil:
		return &pb.FireResult{Reason: fsm.ReasonGone}, nil
	case f.byID[requestID] != nil:
		r := f.byID[requestID]
		return &pb.FireResult{Reason: fsm.ReasonDuplicateRequest, RunId: r.GetId(), Run: r}, nil
	case job.GetSpec().GetPaused() && !force:
		return &pb.FireResult{Reason: fsm.ReasonPaused}, nil
	case f.overlap:
		return &pb.FireResult{Reason: fsm.ReasonOverlapSkipped}, nil
	}
	f.token++
	r := &pb.Run{
		Id: fmt.Sprintf("%s-%d", name, f.token), Job: name, Kind: pb.FireKind_FIRE_KIND_MANUAL,
		State: pb.RunState_RUN_STATE_DISPATCHED, RequestId: requestID, SlotUnix: testNow.Unix(),
		Attempts: []*pb.Attempt{{Number: 1, Token: f.token, Kind: pb.FireKind_FIRE_KIND_MANUAL, State: pb.RunState_RUN_STATE_DISPATCHED}},
	}
	f.byID[requestID] = r
	return &pb.FireResult{Accepted: true, Token: f.token, RunId: r.GetId(), Attempt: 1, Run: r}, nil
}

func (f *fakeTriggerer) seen() []triggerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]triggerCall(nil), f.calls...)
}

func (f *fakeTriggerer) set(fn func(*fakeTriggerer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// fakeLeadership is a node's view of who leads, with a connection to the
// leader's gRPC server.
type fakeLeadership struct {
	mu      sync.Mutex // guards everything below
	leader  bool
	conn    *grpc.ClientConn
	connErr error
	dials   int
}

func (l *fakeLeadership) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

func (l *fakeLeadership) LeaderConn() (*grpc.ClientConn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dials++
	if l.connErr != nil {
		return nil, l.connErr
	}
	return l.conn, nil
}

func (l *fakeLeadership) dialed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dials
}

// triggerNode is a harness with a scheduler and a leadership view.
type triggerNode struct {
	*harness
	trig *fakeTriggerer
	lead *fakeLeadership
}

func newTriggerNode(t *testing.T, leader bool) *triggerNode {
	n := &triggerNode{lead: &fakeLeadership{leader: leader}}
	n.harness = newHarnessConfig(t, func(c *Deps) {
		n.trig = newFakeTriggerer(c.Store.(*fakeStore))
		c.Triggerer, c.Leadership = n.trig, n.lead
	})
	return n
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestTriggerJobOnLeader(t *testing.T) {
	n := newTriggerNode(t, true)
	n.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	barriers := n.store.barrierCount()
	resp, err := n.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing"})
	if err != nil {
		t.Fatalf("TriggerJob: %v", err)
	}
	run := resp.GetRun()
	if run.GetId() != "billing-1" || run.GetKind() != pb.FireKind_FIRE_KIND_MANUAL || run.GetAttempts()[0].GetToken() != 1 {
		t.Fatalf("run %v, want billing-1, MANUAL, token 1", run)
	}
	calls := n.trig.seen()
	if len(calls) != 1 || calls[0].name != "billing" || calls[0].force || !hexID.MatchString(calls[0].requestID) ||
		calls[0].principal != Anonymous {
		t.Fatalf("scheduler saw %+v, want one unforced trigger by %s with a generated 32-hex request id", calls, Anonymous)
	}
	if run.GetRequestId() != calls[0].requestID {
		t.Errorf("run request id %q, scheduler saw %q", run.GetRequestId(), calls[0].requestID)
	}
	if n.store.barrierCount() != barriers+1 {
		t.Errorf("the job was not checked after a read barrier")
	}
	if n.lead.dialed() != 0 {
		t.Errorf("the leader forwarded its own trigger")
	}
}

func TestTriggerJobRequestIDIsIdempotent(t *testing.T) {
	n := newTriggerNode(t, true)
	n.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	ctx := testCtx(t)
	first, err := n.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", RequestId: "deploy-42"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := n.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", RequestId: "deploy-42"})
	if err != nil {
		t.Fatalf("retry with the same request id: %v", err)
	}
	if again.GetRun().GetId() != first.GetRun().GetId() {
		t.Fatalf("retry returned run %s, first call %s", again.GetRun().GetId(), first.GetRun().GetId())
	}
	other, err := n.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", RequestId: "deploy-43"})
	if err != nil || other.GetRun().GetId() == first.GetRun().GetId() {
		t.Fatalf("a new request id gave %v, %v; want a new run", other.GetRun(), err)
	}
	for _, c := range n.trig.seen()[:2] {
		if c.requestID != "deploy-42" {
			t.Errorf("scheduler saw request id %q, want the caller's deploy-42", c.requestID)
		}
	}
}

func TestTriggerJobMissingJobIsNotFound(t *testing.T) {
	n := newTriggerNode(t, true)
	_, err := n.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound)
	if calls := n.trig.seen(); len(calls) != 0 {
		t.Errorf("a missing job reached the scheduler: %+v", calls)
	}
}

func TestTriggerJobGoneInBetweenIsNotFound(t *testing.T) {
	_, err := triggered("billing", &pb.FireResult{Reason: fsm.ReasonGone})
	wantCode(t, err, codes.NotFound)
}

// A job retargeted between the leader's planning and the commit refuses
// the trigger with generation: nothing ran, and a retry will find the new
// generation, so the caller is told to retry (Aborted).
func TestTriggerJobRetargetedInBetweenIsAborted(t *testing.T) {
	_, err := triggered("billing", &pb.FireResult{Reason: fsm.ReasonGeneration})
	st := wantCode(t, err, codes.Aborted)
	if !strings.Contains(st.Message(), "retry") {
		t.Errorf("message %q does not tell the caller to retry", st.Message())
	}
}

func TestTriggerJobPausedNeedsForce(t *testing.T) {
	n := newTriggerNode(t, true)
	spec := validSpec("billing")
	spec.Paused = true
	n.store.putJob(&pb.Job{Spec: spec, Generation: 1, Version: 1})
	ctx := testCtx(t)
	_, err := n.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing"})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "force") || !strings.Contains(st.Message(), "paused") {
		t.Errorf("message %q does not say paused and name force", st.Message())
	}
	if kind := preconditionType(st.Details()); kind != PreconditionPaused {
		t.Errorf("precondition type %q, want %s", kind, PreconditionPaused)
	}
	resp, err := n.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", Force: true})
	if err != nil || resp.GetRun().GetId() == "" {
		t.Fatalf("forced trigger of a paused job: %v %v", resp, err)
	}
	if calls := n.trig.seen(); !calls[len(calls)-1].force {
		t.Errorf("force did not reach the scheduler: %+v", calls)
	}
}

func TestTriggerJobOverlapRefusalIsFailedPrecondition(t *testing.T) {
	n := newTriggerNode(t, true)
	n.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	n.trig.set(func(f *fakeTriggerer) { f.overlap = true })
	_, err := n.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing"})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), fsm.ReasonOverlapSkipped) || preconditionType(st.Details()) != PreconditionOverlap {
		t.Errorf("status %v does not carry the overlap reason", st)
	}
}

func TestTriggerJobForwardedFromFollower(t *testing.T) {
	leader := newTriggerNode(t, true)
	leader.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	follower := newTriggerNode(t, false)
	follower.lead.conn = leader.conn

	resp, err := follower.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing", Force: true})
	if err != nil {
		t.Fatalf("TriggerJob through a follower: %v", err)
	}
	if resp.GetRun().GetId() != "billing-1" {
		t.Fatalf("run %v, want the leader's billing-1", resp.GetRun())
	}
	if calls := follower.trig.seen(); len(calls) != 0 {
		t.Errorf("the follower triggered itself: %+v", calls)
	}
	calls := leader.trig.seen()
	if len(calls) != 1 || !calls[0].forwarded || !calls[0].force || !hexID.MatchString(calls[0].requestID) {
		t.Fatalf("leader saw %+v, want one forwarded, forced call with the follower's generated request id", calls)
	}

	t.Run("missing job", func(t *testing.T) {
		_, err := follower.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "nope"})
		wantCode(t, err, codes.NotFound)
	})
	t.Run("request id passes through", func(t *testing.T) {
		ctx := testCtx(t)
		a, err := follower.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", RequestId: "r-7"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := leader.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", RequestId: "r-7"})
		if err != nil || b.GetRun().GetId() != a.GetRun().GetId() {
			t.Fatalf("the same request id on the leader gave %v, %v; want run %s", b.GetRun(), err, a.GetRun().GetId())
		}
	})
}

func TestTriggerJobSchedulerNotLeaderForwards(t *testing.T) {
	leader := newTriggerNode(t, true)
	leader.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	// Raft says this node leads, but its scheduler has stepped down.
	stepping := newTriggerNode(t, true)
	stepping.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	stepping.trig.set(func(f *fakeTriggerer) { f.err = fmt.Errorf("wrapped: %w", cluster.ErrNotLeader) })
	stepping.lead.conn = leader.conn

	resp, err := stepping.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing", RequestId: "r-1"})
	if err != nil || resp.GetRun().GetRequestId() != "r-1" {
		t.Fatalf("TriggerJob: %v, %v; want the leader's run for r-1", resp, err)
	}
	if len(leader.trig.seen()) != 1 {
		t.Fatalf("the leader saw %+v", leader.trig.seen())
	}
}

func TestTriggerJobForwardsOnlyOnce(t *testing.T) {
	// Two nodes that both think the other leads: the call must not bounce.
	a, b := newTriggerNode(t, false), newTriggerNode(t, false)
	a.lead.conn, b.lead.conn = b.conn, a.conn
	_, err := a.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing"})
	st := wantCode(t, err, codes.Unavailable)
	if ei := errorInfo(st); ei == nil || ei.GetReason() != cluster.ReasonNotLeader {
		t.Fatalf("status %v, want NOT_LEADER so the client retries", st)
	}
	if a.lead.dialed() != 1 || b.lead.dialed() != 0 {
		t.Fatalf("dials: a %d, b %d; want a forwarded once and b not at all", a.lead.dialed(), b.lead.dialed())
	}
	if len(a.trig.seen())+len(b.trig.seen()) != 0 {
		t.Fatal("a follower triggered")
	}
}

func TestTriggerJobForwardedCallIsNeverForwarded(t *testing.T) {
	n := newTriggerNode(t, false)
	ctx := metadata.AppendToOutgoingContext(testCtx(t), ForwardedKey, "1")
	_, err := n.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing"})
	wantCode(t, err, codes.Unavailable)
	if n.lead.dialed() != 0 {
		t.Fatal("a forwarded call was forwarded again")
	}
}

func TestTriggerJobNoLeaderKnown(t *testing.T) {
	n := newTriggerNode(t, false)
	n.lead.connErr = errFakeNoLeader
	_, err := n.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing"})
	st := wantCode(t, err, codes.Unavailable)
	if ei := errorInfo(st); ei == nil || ei.GetReason() != cluster.ReasonNotLeader {
		t.Fatalf("status %v, want NOT_LEADER", st)
	}
}

func TestTriggerJobBadInput(t *testing.T) {
	n := newTriggerNode(t, true)
	n.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	cases := []struct {
		name  string
		req   *pb.TriggerJobRequest
		field string
	}{
		{"no name", &pb.TriggerJobRequest{}, "name"},
		{"bad name", &pb.TriggerJobRequest{Name: "Bad Name"}, "name"},
		{"request id with spaces", &pb.TriggerJobRequest{Name: "billing", RequestId: "a b"}, "request_id"},
		{"request id too long", &pb.TriggerJobRequest{Name: "billing", RequestId: strings.Repeat("x", 129)}, "request_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.jobs.TriggerJob(testCtx(t), tc.req)
			st := wantCode(t, err, codes.InvalidArgument)
			if fields := badRequestFields(t, st); len(fields) != 1 || fields[0] != tc.field {
				t.Errorf("fields %v, want [%s]", fields, tc.field)
			}
		})
	}
	if calls := n.trig.seen(); len(calls) != 0 {
		t.Fatalf("bad input reached the scheduler: %+v", calls)
	}
}

func TestTriggerJobWithoutScheduler(t *testing.T) {
	h := newHarness(t)
	h.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1})
	_, err := h.jobs.TriggerJob(testCtx(t), &pb.TriggerJobRequest{Name: "billing"})
	wantCode(t, err, codes.Unimplemented)
}

func preconditionType(details []any) string {
	for _, d := range details {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok && len(pf.GetViolations()) > 0 {
			return pf.GetViolations()[0].GetType()
		}
	}
	return ""
}
