package remote

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// An offer carries the leader's signature when the cluster signs its
// dispatches, and the leader's limits: a target without a timeout goes
// with the default a node's own command would get, the job's spec left
// as it is.
func TestOffersAreSignedAndBounded(t *testing.T) {
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	a := attemptIn("batch")
	a.Worker = &pb.WorkerTarget{Pool: "batch", Handler: "charge", Payload: `{"mode":"full"}`}
	w := wireAttempt(a, dispatch.NewSigner(keys, nil))
	if err := fence.NewVerifier(keys).Verify(fence.ExecDispatch(a.FenceRun(), []byte(w.GetTarget().GetPayload())), w.GetSignature()); err != nil {
		t.Fatalf("offer signature %q: %v, want v2 over the run and its payload", w.GetSignature(), err)
	}
	if err := fence.NewVerifier(keys).Verify(fence.ExecDispatch(a.FenceRun(), nil), w.GetSignature()); err == nil {
		t.Fatal("the offer's signature does not cover its payload")
	}
	if got := w.GetTarget().GetTimeout().AsDuration(); got != jobspec.DefaultExecTimeout || w.GetDeadline() != nil {
		t.Fatalf("offer without a timeout or deadline: timeout %v deadline %v, want %v and none", got, w.GetDeadline(), jobspec.DefaultExecTimeout)
	}
	if a.Worker.GetTimeout() != nil {
		t.Fatal("the default was written into the job's own target")
	}

	a.Deadline = time.Minute
	if w := wireAttempt(a, nil); w.GetSignature() != "" || w.GetTarget().GetTimeout() != nil || w.GetDeadline().AsDuration() != time.Minute {
		t.Fatalf("unsigned offer with a deadline: %v, want no signature and the deadline alone", w)
	}
	a.Deadline = 0
	a.Worker.Timeout = durationpb.New(time.Second)
	if w := wireAttempt(a, nil); w.GetTarget().GetTimeout().AsDuration() != time.Second {
		t.Fatalf("offer with its own timeout: %v", w)
	}
}

// A worker's refusal by its own policy is the node's exec_denied: the run
// is not retried. No other reason is taken from a worker, since a reason
// would only stop the run's retries.
func TestOnlyAWorkersRefusalCarriesAReason(t *testing.T) {
	c := &conn{id: "w1"}
	at := &attempt{a: attemptIn("batch"), offeredAt: time.Now()}
	for _, tc := range []struct {
		state  pb.RunState
		reason string
		want   string
	}{
		{pb.RunState_RUN_STATE_FAILED, dispatch.ReasonExecDenied, dispatch.ReasonExecDenied},
		{pb.RunState_RUN_STATE_FAILED, "", ""},
		{pb.RunState_RUN_STATE_FAILED, "no_retry_please", ""},
		{pb.RunState_RUN_STATE_SUCCEEDED, dispatch.ReasonExecDenied, ""},
	} {
		o := outcome(c.id, at, &pb.WorkerOutcome{RunId: at.a.RunID, Token: at.a.Token, State: tc.state, Reason: tc.reason}, time.Now())
		if o.State != tc.state || o.Reason != tc.want {
			t.Errorf("%v with reason %q: got %v with reason %q, want reason %q", tc.state, tc.reason, o.State, o.Reason, tc.want)
		}
	}
}
