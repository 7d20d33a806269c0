package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// handlerAttempt is a committed attempt of handler "charge" in pool.
func handlerAttempt(pool string) dispatch.Attempt {
	a := attemptIn(pool)
	a.Worker = &pb.WorkerTarget{Pool: pool, Handler: "charge", Payload: `{"mode":"full"}`}
	return a
}

func pollReq(id, pool string) PollRequest {
	return PollRequest{ID: id, Pool: pool, Handlers: []string{"charge"}, Max: 8, Wait: 5 * time.Second}
}

// poll polls as an HTTP worker with grant g and fails the test on an
// error.
func (f *fixture) poll(req PollRequest, g Grant) []*pb.AttemptOffer {
	f.t.Helper()
	offers, err := f.h.Poll(context.Background(), g, req)
	if err != nil {
		f.t.Fatalf("poll %s: %v", req.ID, err)
	}
	return offers
}

// whyOf is the reason and why of a SUPERSEDED status, or "".
func whyOf(err error) string {
	st, _ := status.FromError(err)
	if st.Code() != codes.Aborted {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == ReasonSuperseded {
			return info.GetMetadata()[MetadataWhy]
		}
	}
	return ""
}

// A poll waits for an attempt of its pool and answers with it at once,
// carrying what a worker needs: the handler, payload, token, its limits
// and lease as instants and lengths, the RAFTCRON_* variables.
func TestPollWaitsForAnOffer(t *testing.T) {
	f := newFixture(t, time.Second)
	a := handlerAttempt("batch")
	a.Deadline = time.Minute
	go func() { // once the poll waits
		testutil.WaitFor(t, 5*time.Second, "the poll to open", func() bool { return f.h.room("w1") == 8 })
		f.submit(context.Background(), a)
	}()
	began := time.Now()
	offers := f.poll(pollReq("w1", "batch"), Grant{})
	if len(offers) != 1 {
		t.Fatalf("offers %v, want the one attempt", offers)
	}
	o := offers[0]
	switch {
	case o.GetToken() != a.Token || o.GetRunId() != a.RunID || o.GetHandler() != "charge" || o.GetPayload() != `{"mode":"full"}`:
		t.Fatalf("offer %v, want attempt %d with its handler and payload", o, a.Token)
	case o.GetLease().AsDuration() != time.Second || o.GetLimit().AsDuration() != time.Minute:
		t.Fatalf("offer lease %v limit %v, want 1s and the job's deadline", o.GetLease().AsDuration(), o.GetLimit().AsDuration())
	case o.GetLeaseExpires().AsTime().Sub(o.GetDeadline().AsTime()) != time.Second-time.Minute:
		t.Fatalf("offer lease_expires %v deadline %v, want both from the offer's time", o.GetLeaseExpires(), o.GetDeadline())
	case o.GetLeaseExpires().AsTime().Before(began):
		t.Fatalf("lease expires at %v, before the poll began", o.GetLeaseExpires().AsTime())
	case o.GetEnv()[fence.EnvFencingToken] != "1" && o.GetEnv()[fence.EnvFencingToken] == "":
		t.Fatalf("env %v, want the run's variables", o.GetEnv())
	case o.GetIdempotencyKey() != a.IdempotencyKey() || !o.GetSlot().AsTime().Equal(a.ScheduledAt):
		t.Fatalf("offer key %q slot %v, want %q %v", o.GetIdempotencyKey(), o.GetSlot().AsTime(), a.IdempotencyKey(), a.ScheduledAt)
	}
	if o.GetSignature() != "" {
		t.Fatalf("signature %q from a hub without keys", o.GetSignature())
	}

	// Nothing more waiting: the next poll answers empty after its wait.
	req := pollReq("w1", "batch")
	req.Wait = 100 * time.Millisecond
	if offers := f.poll(req, Grant{}); len(offers) != 0 {
		t.Fatalf("second poll: %v, want none", offers)
	}
}

// A poll is offered only what it can run: its pool, its tags, its
// handlers, never a command; and at most max.
func TestPollTakesOnlyWhatItRuns(t *testing.T) {
	f := newFixture(t, time.Second)
	other := handlerAttempt("other")
	command := attemptIn("batch")
	tagged := handlerAttempt("batch")
	tagged.Worker.Tags = map[string]string{"region": "eu"}
	unknown := handlerAttempt("batch")
	unknown.Worker.Handler = "refund"
	mine := []dispatch.Attempt{handlerAttempt("batch"), handlerAttempt("batch"), handlerAttempt("batch")}
	for _, a := range append([]dispatch.Attempt{other, command, tagged, unknown}, mine...) {
		f.submit(context.Background(), a)
	}
	req := pollReq("w1", "batch")
	req.Max, req.Wait = 2, 0
	first := f.poll(req, Grant{})
	second := f.poll(req, Grant{})
	if len(first) != 2 || len(second) != 1 || first[0].GetToken() != mine[0].Token || second[0].GetToken() != mine[2].Token {
		t.Fatalf("polls of max 2 got %v then %v, want the pool's handler attempts in order, two then one", first, second)
	}
	req.Tags = map[string]string{"region": "eu"}
	if got := f.poll(req, Grant{}); len(got) != 1 || got[0].GetToken() != tagged.Token {
		t.Fatalf("poll with the tag: %v, want the tagged attempt", got)
	}
}

// Heartbeats keep an attempt past many leases; without them it is lost
// within about a lease, and its heartbeats and outcome then answer
// SUPERSEDED (lease_expired). The late outcome is still handed on once.
func TestHeartbeatsKeepTheLease(t *testing.T) {
	const lease = 300 * time.Millisecond
	f := newFixture(t, lease)
	a := handlerAttempt("batch")
	f.submit(context.Background(), a)
	o := f.poll(pollReq("w1", "batch"), Grant{})[0]

	// Four leases of heartbeats, every third of the lease.
	for end := time.Now().Add(4 * lease); time.Now().Before(end); time.Sleep(lease / 3) {
		until, got, err := f.h.Heartbeat(Grant{}, Beat{RunID: o.GetRunId(), Token: o.GetToken()})
		if err != nil || got != lease || time.Until(until) > lease {
			t.Fatalf("heartbeat: until %v lease %v err %v, want the lease extended", until, got, err)
		}
	}
	if n := f.got.count(a.Token); n != 0 {
		t.Fatalf("%d outcomes of a heartbeated attempt, want none", n)
	}

	lost := f.got.wait(t, a.Token, 1)
	if !lost.Lost {
		t.Fatalf("outcome without heartbeats %+v, want lost", lost)
	}
	_, _, err := f.h.Heartbeat(Grant{}, Beat{RunID: o.GetRunId(), Token: o.GetToken()})
	if why := whyOf(err); why != WhyLeaseExpired {
		t.Fatalf("heartbeat after the lease: %v, want SUPERSEDED %s", err, WhyLeaseExpired)
	}
	err = f.h.Complete(Grant{}, &pb.WorkerOutcome{RunId: o.GetRunId(), Token: o.GetToken(), State: pb.RunState_RUN_STATE_SUCCEEDED})
	if whyOf(err) != WhyLeaseExpired {
		t.Fatalf("late complete: %v, want SUPERSEDED %s", err, WhyLeaseExpired)
	}
	if late := f.got.wait(t, a.Token, 2); late.State != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("late outcome %+v, want it handed on", late)
	}
	err = f.h.Complete(Grant{}, &pb.WorkerOutcome{RunId: o.GetRunId(), Token: o.GetToken(), State: pb.RunState_RUN_STATE_SUCCEEDED})
	if whyOf(err) != WhyNotHeld || f.got.count(a.Token) != 2 {
		t.Fatalf("second late complete: %v (%d outcomes), want SUPERSEDED %s and nothing handed on", err, f.got.count(a.Token), WhyNotHeld)
	}
}

// An attempt's own worker.lease decides its lease over the hub's.
func TestAJobsLeaseOverridesTheNodes(t *testing.T) {
	f := newFixture(t, time.Second)
	a := handlerAttempt("batch")
	a.Worker.Lease = durationpb.New(5 * time.Second)
	f.submit(context.Background(), a)
	o := f.poll(pollReq("w1", "batch"), Grant{})[0]
	if o.GetLease().AsDuration() != 5*time.Second {
		t.Fatalf("offer lease %v, want the job's 5s", o.GetLease().AsDuration())
	}
	if _, l, err := f.h.Heartbeat(Grant{}, Beat{RunID: o.GetRunId(), Token: o.GetToken()}); err != nil || l != 5*time.Second {
		t.Fatalf("heartbeat: lease %v err %v, want 5s", l, err)
	}
}

// A completed attempt is its outcome, once: a retried complete answers
// SUPERSEDED (not_held) and hands nothing on.
func TestCompleteIsTakenOnce(t *testing.T) {
	f := newFixture(t, time.Second)
	a := handlerAttempt("batch")
	f.submit(context.Background(), a)
	o := f.poll(pollReq("w1", "batch"), Grant{})[0]
	out := &pb.WorkerOutcome{RunId: o.GetRunId(), Token: o.GetToken(), State: pb.RunState_RUN_STATE_FAILED, Detail: "card declined"}
	if err := f.h.Complete(Grant{}, out); err != nil {
		t.Fatal(err)
	}
	if got := f.got.wait(t, a.Token, 1); got.State != pb.RunState_RUN_STATE_FAILED || got.Detail != "worker w1: card declined" {
		t.Fatalf("outcome %+v, want FAILED with the worker's detail", got)
	}
	if err := f.h.Complete(Grant{}, out); whyOf(err) != WhyNotHeld {
		t.Fatalf("retried complete: %v, want SUPERSEDED %s", err, WhyNotHeld)
	}
	if _, _, err := f.h.Heartbeat(Grant{}, Beat{RunID: o.GetRunId(), Token: o.GetToken()}); whyOf(err) != WhyNotHeld {
		t.Fatalf("heartbeat after the outcome: %v, want SUPERSEDED %s", err, WhyNotHeld)
	}
}

// A limit that ran out is the job's deadline exceeded, or a failure when
// the target's timeout was the limit, whatever the worker calls it.
func TestALimitThatRanOutIsJudgedByTheLeader(t *testing.T) {
	f := newFixture(t, time.Second)
	for _, tc := range []struct {
		deadline time.Duration
		timeout  time.Duration
		want     pb.RunState
	}{
		{time.Minute, 0, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED},
		{time.Minute, time.Second, pb.RunState_RUN_STATE_FAILED},
	} {
		a := handlerAttempt("batch")
		a.Deadline = tc.deadline
		if tc.timeout > 0 {
			a.Worker.Timeout = durationpb.New(tc.timeout)
		}
		f.submit(context.Background(), a)
		o := f.poll(pollReq("w1", "batch"), Grant{})[0]
		if err := f.h.Complete(Grant{}, &pb.WorkerOutcome{RunId: o.GetRunId(), Token: o.GetToken(),
			State: pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, Detail: "stopped"}); err != nil {
			t.Fatal(err)
		}
		if got := f.got.wait(t, a.Token, 1); got.State != tc.want {
			t.Fatalf("deadline %v timeout %v: outcome %+v, want %v", tc.deadline, tc.timeout, got, tc.want)
		}
	}
}

// A cancelled run's attempt is told at its next heartbeat (SUPERSEDED,
// cancelled), stays the worker's until it reports, and ends as the
// worker reports it.
func TestACancelReachesTheWorkerAtItsHeartbeat(t *testing.T) {
	f := newFixture(t, time.Second)
	ctx, cancel := context.WithCancelCause(context.Background())
	a := handlerAttempt("batch")
	f.submit(ctx, a)
	o := f.poll(pollReq("w1", "batch"), Grant{})[0]
	cancel(errors.New("run cancelled"))
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for whyOf(err) != WhyCancelled && time.Now().Before(deadline) {
		_, _, err = f.h.Heartbeat(Grant{}, Beat{RunID: o.GetRunId(), Token: o.GetToken()})
	}
	if whyOf(err) != WhyCancelled {
		t.Fatalf("heartbeat of a cancelled attempt: %v, want SUPERSEDED %s", err, WhyCancelled)
	}
	if n := f.got.count(a.Token); n != 0 {
		t.Fatalf("%d outcomes before the worker reported, want none", n)
	}
	if err := f.h.Complete(Grant{}, &pb.WorkerOutcome{RunId: o.GetRunId(), Token: o.GetToken(), State: pb.RunState_RUN_STATE_CANCELLED}); err != nil {
		t.Fatal(err)
	}
	if got := f.got.wait(t, a.Token, 1); got.State != pb.RunState_RUN_STATE_CANCELLED || got.Lost {
		t.Fatalf("outcome %+v, want CANCELLED", got)
	}
}

// A worker that gives an attempt back (cancelled, unasked) loses it: the
// scheduler re-dispatches it as it does a lost one.
func TestAnAttemptGivenBackIsLost(t *testing.T) {
	f := newFixture(t, time.Second)
	a := handlerAttempt("batch")
	f.submit(context.Background(), a)
	o := f.poll(pollReq("w1", "batch"), Grant{})[0]
	if err := f.h.Complete(Grant{}, &pb.WorkerOutcome{RunId: o.GetRunId(), Token: o.GetToken(), State: pb.RunState_RUN_STATE_CANCELLED}); err != nil {
		t.Fatal(err)
	}
	if got := f.got.wait(t, a.Token, 1); !got.Lost {
		t.Fatalf("outcome %+v, want lost", got)
	}
}

// Offers of a poll whose caller went away before its answer are offered
// again under their tokens: nobody saw them.
func TestAnAbandonedPollGivesItsOffersBack(t *testing.T) {
	f := newFixture(t, time.Second)
	a := handlerAttempt("batch")
	f.submit(context.Background(), a)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.h.Poll(gone, Grant{}, pollReq("w1", "batch")); !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned poll: %v, want its context's end", err)
	}
	if got := f.poll(pollReq("w2", "batch"), Grant{}); len(got) != 1 || got[0].GetToken() != a.Token {
		t.Fatalf("next poll: %v, want attempt %d again", got, a.Token)
	}
	if n := f.got.count(a.Token); n != 0 {
		t.Fatalf("%d outcomes of an attempt given back, want none", n)
	}
}

// A poll is refused what its grant does not allow; one worker ID is one
// worker, over either protocol and with one token.
func TestPollIdentityAndGrant(t *testing.T) {
	f := newFixture(t, time.Second)
	g := Grant{Token: "acc-1", Pools: []string{"batch"}, MaxConcurrency: 4}
	code := func(req PollRequest, g Grant) codes.Code {
		_, err := f.h.Poll(context.Background(), g, req)
		return status.Code(err)
	}
	req := pollReq("w1", "batch")
	req.Wait = 0
	other := pollReq("w1", "other")
	other.Wait = 0
	if c := code(other, g); c != codes.PermissionDenied {
		t.Fatalf("poll of a pool the token does not name: %v, want PermissionDenied", c)
	}
	req.Max = 5
	if c := code(req, g); c != codes.PermissionDenied {
		t.Fatalf("poll of more than max_concurrency: %v, want PermissionDenied", c)
	}
	req.Max = 4
	if c := code(req, g); c != codes.OK {
		t.Fatalf("poll within the grant: %v", c)
	}
	if c := code(req, Grant{Token: "acc-2"}); c != codes.AlreadyExists {
		t.Fatalf("poll of the ID with another token: %v, want AlreadyExists", c)
	}
	if _, err := f.dial(hello("w1", "batch", 1)); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("stream under a polled ID: %v, want AlreadyExists", err)
	}
	w := f.connect(hello("w2", "batch", 1))
	req.ID = "w2"
	if c := code(req, g); c != codes.AlreadyExists {
		t.Fatalf("poll under a connected ID: %v, want AlreadyExists", c)
	}
	w.cancel()
}

// An HTTP worker that polls no more and holds nothing frees its ID within
// about a lease.
func TestAnIdleHTTPWorkerFreesItsID(t *testing.T) {
	f := newFixture(t, 200*time.Millisecond)
	req := pollReq("w1", "batch")
	req.Wait = 0
	f.poll(req, Grant{})
	deadline := time.Now().Add(5 * time.Second)
	for {
		w, err := f.dial(hello("w1", "batch", 1))
		if err == nil {
			w.cancel()
			return
		}
		if status.Code(err) != codes.AlreadyExists || time.Now().After(deadline) {
			t.Fatalf("stream under an idle HTTP worker's ID: %v, want it in within 5s", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A node that stops leading ends its polls; their workers go elsewhere. So
// it does for the first poll after the hub slept with nothing to check.
func TestPollsEndWhenTheNodeStopsLeading(t *testing.T) {
	for _, asleep := range []bool{false, true} {
		t.Run(fmt.Sprintf("hub asleep before the poll=%v", asleep), func(t *testing.T) {
			f := newFixture(t, 200*time.Millisecond)
			if asleep {
				testutil.WaitFor(t, 5*time.Second, "the hub asleep with nothing to check", func() bool { return f.h.sleeps.Load() > 0 })
			}
			ended := make(chan error, 1)
			go func() {
				_, err := f.h.Poll(context.Background(), Grant{}, pollReq("w1", "batch"))
				ended <- err
			}()
			testutil.WaitFor(t, 5*time.Second, "the poll to open", func() bool { return f.h.room("w1") == 8 })
			f.leading.Store(false)
			select {
			case err := <-ended:
				if !errors.Is(err, errNotLeading) {
					t.Fatalf("poll ended with %v, want %v", err, errNotLeading)
				}
			case <-time.After(3 * time.Second): // before the poll's own wait of 5s
				t.Fatal("poll still open 3s after the node stopped leading")
			}
		})
	}
}

// A report goes on to be committed only when it changes something; a
// stream's report of an attempt it does not hold gets a cancel.
func TestProgressGoesOnOnlyWhenItChanges(t *testing.T) {
	var mu sync.Mutex
	var recs []*pb.ProgressRecord
	f := newFixture(t, time.Second)
	f.h.progress = func(r *pb.ProgressRecord) {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, r)
	}
	a := handlerAttempt("batch")
	f.submit(context.Background(), a)
	o := f.poll(pollReq("w1", "batch"), Grant{})[0]
	half, msg := uint32(50), "half"
	for _, b := range []Beat{
		{Progress: &half, Message: &msg},
		{Progress: &half},
		{},
		{Message: &msg},
	} {
		b.RunID, b.Token = o.GetRunId(), o.GetToken()
		if _, _, err := f.h.Heartbeat(Grant{}, b); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	got := recs
	mu.Unlock()
	if len(got) != 1 || got[0].GetProgress() != 50 || got[0].GetMessage() != "half" || got[0].GetToken() != a.Token {
		t.Fatalf("records %v, want one of 50%% \"half\"", got)
	}

	w := f.connect(&pb.WorkerHello{Id: "w2", Pool: "stream", Concurrency: 1, Handlers: []string{"charge"}})
	w.send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Progress{Progress: &pb.WorkerProgress{Attempts: []*pb.AttemptProgress{
		{RunId: "gone-1", Token: 99999, Progress: &half},
	}}}})
	m := w.next()
	if c := m.GetCancels(); len(c.GetTokens()) != 1 || c.GetTokens()[0] != 99999 {
		t.Fatalf("answer to a report of an attempt not held: %v, want its cancel", m)
	}
}

// The signature vector of docs/workers.md.
func TestOfferSignatureVector(t *testing.T) {
	keys, err := fence.NewKeys([]byte("n3w-key-n3w-key-n3w-key-n3w-key-n3w-key="))
	if err != nil {
		t.Fatal(err)
	}
	at := &attempt{a: dispatch.Attempt{
		Job: "charge", RunID: "charge-7", Token: 42, Number: 1,
		ScheduledAt: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC),
		Worker:      &pb.WorkerTarget{Pool: "billing", Handler: "charge", Payload: `{"mode":"full"}`},
	}, offeredAt: time.Now()}
	at.leaseUntil = at.offeredAt.Add(10 * time.Second)
	o := httpOffer(at, dispatch.NewSigner(keys, nil))
	const want = "v2=SxehAqPD3v-Ma8D3j2rNJqgTbxPWiwSSAhmNlSkADhg"
	if o.GetSignature() != want || o.GetEnv()[fence.EnvSignature] != want {
		t.Fatalf("signature %q (env %q), want the documented %q", o.GetSignature(), o.GetEnv()[fence.EnvSignature], want)
	}
	if o.GetIdempotencyKey() != "charge/2026-11-22T01:02:03Z" || o.GetEnv()[fence.EnvFencingToken] != "42" {
		t.Fatalf("offer %v, want the documented key and token", o)
	}
}

// HTTP and stream workers serve one pool side by side: the pump spreads
// its attempts over both.
func TestHTTPAndStreamWorkersShareAPool(t *testing.T) {
	f := newFixture(t, time.Second)
	w := f.connect(&pb.WorkerHello{Id: "go-1", Pool: "batch", Concurrency: 1, Handlers: []string{"charge"}})
	polled := make(chan []*pb.AttemptOffer, 1)
	go func() {
		req := pollReq("py-1", "batch")
		req.Max = 1
		offers, _ := f.h.Poll(context.Background(), Grant{}, req)
		polled <- offers
	}()
	testutil.WaitFor(t, 5*time.Second, "the poll to open", func() bool { return f.h.room("py-1") == 1 })
	a, b := handlerAttempt("batch"), handlerAttempt("batch")
	f.submit(context.Background(), a)
	f.submit(context.Background(), b)
	streamed, _ := w.offers(1)
	offers := <-polled
	if len(offers) != 1 || offers[0].GetToken() == streamed[0].GetToken() {
		t.Fatalf("stream got %d, poll got %v: want one attempt each", streamed[0].GetToken(), offers)
	}
}
