package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const testLease = 300 * time.Millisecond

// A tick's attempts reach a worker in a few messages, not one per
// attempt, and each outcome comes back to its attempt, stamped with the
// worker's name and the leader's clock.
func TestOffersTravelInBatches(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	const n = 2500
	before := time.Now()
	// Waiting when the worker connects: one pump, messages of 1,000.
	for range n {
		f.submit(context.Background(), attemptIn("batch"))
	}
	w := f.connect(hello("w1", "batch", 2*n))
	got, msgs := w.offers(n)
	if msgs != 3 {
		t.Fatalf("%d waiting attempts came in %d messages, want 3 of at most 1,000", n, msgs)
	}
	// How long they waited for a worker is on record.
	var m dto.Metric
	if err := f.h.metrics.wait.Write(&m); err != nil {
		t.Fatal(err)
	}
	if h := m.GetHistogram(); h.GetSampleCount() != n || h.GetSampleSum() <= 0 {
		t.Fatalf("wait histogram: %d samples summing to %vs, want %d waits", h.GetSampleCount(), h.GetSampleSum(), n)
	}
	// Submitted while it is connected: the pump takes what gathered since
	// its last round, however the two interleave.
	for range n {
		f.submit(context.Background(), attemptIn("batch"))
	}
	if _, msgs := w.offers(n); msgs > n/10 {
		t.Fatalf("%d attempts came in %d messages, want them batched", n, msgs)
	}
	a := got[0]
	if a.GetIdempotencyKey() != "render/2027-01-15T08:00:00Z" || a.GetTarget().GetPool() != "batch" || a.GetAttempt() != 1 {
		t.Fatalf("offer %v: want the attempt's identity and target", a)
	}
	w.report(a, pb.RunState_RUN_STATE_SUCCEEDED, "exit status 0")
	o := f.got.wait(t, a.GetToken(), 1)
	if o.State != pb.RunState_RUN_STATE_SUCCEEDED || o.Detail != "worker w1: exit status 0" || o.Lost ||
		o.StartedAt.Before(before) || o.FinishedAt.Before(o.StartedAt) {
		t.Fatalf("outcome %+v, want SUCCEEDED from w1 with the leader's times", o)
	}
}

// Attempts spread over the pool's workers by load, never beyond a
// worker's concurrency, and only to workers whose tags, handlers or
// commands fit.
func TestOffersSpreadFairlyWithinCapacityAndFilters(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	w1 := f.connect(hello("w1", "batch", 3))
	gpu := hello("w2", "batch", 3)
	gpu.Tags = map[string]string{"gpu": "yes"}
	w2 := f.connect(gpu)
	for range 4 {
		f.submit(context.Background(), attemptIn("batch"))
	}
	got1, _ := w1.offers(2)
	got2, _ := w2.offers(2)
	if len(got1) != 2 || len(got2) != 2 {
		t.Fatalf("offers %d and %d, want 2 each", len(got1), len(got2))
	}
	// Only w2 has the tag; the third of its capacity goes, a fourth waits.
	for range 2 {
		a := attemptIn("batch")
		a.Worker.Tags = map[string]string{"gpu": "yes"}
		f.submit(context.Background(), a)
	}
	w2.offers(1)
	w1.quiet(200 * time.Millisecond)
	// A handler only w3 registered goes to w3, idle as w1 is.
	w3 := f.connect(&pb.WorkerHello{Id: "w3", Pool: "batch", Concurrency: 1, Handlers: []string{"charge"}})
	h := attemptIn("batch")
	h.Worker = &pb.WorkerTarget{Pool: "batch", Handler: "charge"}
	f.submit(context.Background(), h)
	if got, _ := w3.offers(1); got[0].GetToken() != h.Token {
		t.Fatalf("w3 got %v, want the handler attempt", got)
	}
	// w2 frees a slot: the waiting tagged attempt goes there.
	w2.report(got2[0], pb.RunState_RUN_STATE_SUCCEEDED, "")
	w2.offers(1)
	if f.h.waiting() != 0 {
		t.Fatalf("%d attempts still waiting", f.h.waiting())
	}
}

// A worker that stops heartbeating loses its attempts after the lease;
// connected again under the same ID, its late outcome of a lost attempt
// comes back to that attempt a second time.
func TestSilentWorkerLosesItsAttemptsAndReportsLate(t *testing.T) {
	f := newFixture(t, testLease)
	w := f.connect(hello("w1", "batch", 2))
	a := attemptIn("batch")
	f.submit(context.Background(), a)
	got, _ := w.offers(1)
	start := time.Now()
	o := f.got.wait(t, a.Token, 1)
	if !o.Lost || !strings.Contains(o.Detail, "worker w1") || time.Since(start) < testLease/2 {
		t.Fatalf("outcome %+v after %s, want lost after about the lease", o, time.Since(start))
	}
	if err := w.end(); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("stream ended with %v, want Unavailable naming the lease", err)
	}
	again := f.connect(hello("w1", "batch", 2))
	again.report(got[0], pb.RunState_RUN_STATE_SUCCEEDED, "done after all")
	late := f.got.wait(t, a.Token, 2)
	if late.Lost || late.State != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("late outcome %+v, want SUCCEEDED handed on for the FSM to judge", late)
	}
	// Another worker cannot report it.
	other := f.connect(hello("w2", "batch", 1))
	other.report(got[0], pb.RunState_RUN_STATE_FAILED, "forged")
	other.quiet(100 * time.Millisecond)
	if n := f.got.count(a.Token); n != 2 {
		t.Fatalf("%d outcomes of the attempt, want 2 (a forged report taken?)", n)
	}
}

func TestBrokenStreamLosesAttemptsAtOnce(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	w := f.connect(hello("w1", "batch", 2))
	a := attemptIn("batch")
	f.submit(context.Background(), a)
	w.offers(1)
	w.cancel()
	if o := f.got.wait(t, a.Token, 1); !o.Lost {
		t.Fatalf("outcome %+v, want lost", o)
	}
}

// With no worker of its pool, an attempt waits until WaitUntil and then
// fails no_worker; a worker arriving before then gets it.
func TestNoWorkerFailsAfterTheWait(t *testing.T) {
	f := newFixture(t, testLease)
	a := attemptIn("nobody")
	a.WaitUntil = time.Now().Add(300 * time.Millisecond)
	f.submit(context.Background(), a)
	o := f.got.wait(t, a.Token, 1)
	if o.State != pb.RunState_RUN_STATE_FAILED || !strings.HasPrefix(o.Detail, ReasonNoWorker+": no worker of pool nobody") {
		t.Fatalf("outcome %+v, want FAILED no_worker", o)
	}
	b := attemptIn("late")
	f.submit(context.Background(), b)
	w := f.connect(hello("w1", "late", 1))
	defer w.heartbeat(testLease / 3)()
	if got, _ := w.offers(1); got[0].GetToken() != b.Token {
		t.Fatalf("got %v, want the waiting attempt", got)
	}
}

// Cancelling an attempt ends it at once while it waits, and asks its
// worker once it runs; a cancel the leader did not ask for is a lost
// attempt, not a cancelled run.
func TestCancel(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	ctx, cancel := context.WithCancelCause(context.Background())
	waiting := attemptIn("nobody")
	f.submit(ctx, waiting)
	cancel(errors.New("run cancelled"))
	if o := f.got.wait(t, waiting.Token, 1); o.State != pb.RunState_RUN_STATE_CANCELLED ||
		o.Detail != "cancelled: run cancelled (never started)" {
		t.Fatalf("outcome %+v, want CANCELLED before start", o)
	}

	w := f.connect(hello("w1", "batch", 2))
	ctx, cancel = context.WithCancelCause(context.Background())
	a := attemptIn("batch")
	f.submit(ctx, a)
	got, _ := w.offers(1)
	cancel(errors.New("overlap cancel_other"))
	m := w.next().GetCancels()
	if len(m.GetTokens()) != 1 || m.GetTokens()[0] != a.Token || m.GetReason() != "overlap cancel_other" {
		t.Fatalf("cancel message %v, want the attempt's token and the cause", m)
	}
	w.report(got[0], pb.RunState_RUN_STATE_CANCELLED, "cancelled: overlap cancel_other")
	if o := f.got.wait(t, a.Token, 1); o.State != pb.RunState_RUN_STATE_CANCELLED || o.Lost {
		t.Fatalf("outcome %+v, want CANCELLED", o)
	}

	b := attemptIn("batch")
	f.submit(context.Background(), b)
	got, _ = w.offers(1)
	w.report(got[0], pb.RunState_RUN_STATE_CANCELLED, "worker stopping")
	if o := f.got.wait(t, b.Token, 1); !o.Lost {
		t.Fatalf("outcome %+v of an unasked cancel, want lost", o)
	}
}

func TestWorkersAreDroppedWhenTheNodeStopsLeading(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	w := f.connect(hello("w1", "batch", 2))
	a := attemptIn("batch")
	f.submit(context.Background(), a)
	w.offers(1)
	f.leading.Store(false)
	if err := w.end(); status.Code(err) != codes.Unavailable {
		t.Fatalf("stream ended with %v, want Unavailable", err)
	}
	if o := f.got.wait(t, a.Token, 1); !o.Lost {
		t.Fatalf("outcome %+v, want lost", o)
	}
}

// Two workers started with one ID would take turns dropping each other:
// the second is refused while the first is connected, and gets in once
// the first is gone.
func TestSecondConnectionOfALiveWorkerIsRefused(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	first := f.connect(hello("w1", "batch", 2))
	if _, err := f.dial(hello("w1", "batch", 2)); status.Code(err) != codes.AlreadyExists ||
		!strings.Contains(err.Error(), "worker w1 is already connected") {
		t.Fatalf("second connection: %v, want AlreadyExists", err)
	}
	first.cancel()
	var second *rawWorker
	deadline := time.Now().Add(10 * time.Second)
	for second == nil {
		w, err := f.dial(hello("w1", "batch", 2))
		switch {
		case err == nil:
			second = w
		case time.Now().After(deadline):
			t.Fatalf("reconnection after the first stream ended: %v", err)
		default:
			time.Sleep(10 * time.Millisecond) // the hub sees the broken stream a moment later
		}
	}
	a := attemptIn("batch")
	f.submit(context.Background(), a)
	if got, _ := second.offers(1); got[0].GetToken() != a.Token {
		t.Fatalf("second connection got %v", got)
	}
}

func TestHelloIsChecked(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	for _, tc := range []struct {
		hello *pb.WorkerHello
		want  string
	}{
		{&pb.WorkerHello{Id: "W 1", Pool: "batch", Concurrency: 1}, "hello.id: must match"},
		{&pb.WorkerHello{Id: "w1", Pool: "", Concurrency: 1}, "hello.pool: must match"},
		{&pb.WorkerHello{Id: "w1", Pool: "batch"}, "hello.concurrency: must be between 1 and 100000"},
	} {
		_, err := f.dial(tc.hello)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hello %v: %v, want InvalidArgument saying %q", tc.hello, err, tc.want)
		}
	}
}

// An outcome may come back as soon as an attempt is offered, before
// Submit has returned (a fast worker, a preempted scheduler): the attempt
// must be whole by then. So Submit watches the attempt's context before
// the attempt can be offered; before this, a worker's outcome could meet
// an attempt without its watch and crash the node.
func TestAttemptIsWholeBeforeItCanBeOffered(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	ctx := &probeCtx{Context: context.Background(), h: f.h}
	f.submit(ctx, attemptIn("batch"))
	if seen := ctx.pending.Load(); seen != 0 {
		t.Fatalf("%d attempts pending when Submit watched the context, want 0: it could be offered first", seen)
	}
}

// probeCtx records how many attempts the hub held pending when its Done
// was first asked for, which Submit does to watch it.
type probeCtx struct {
	context.Context
	h       *Hub
	once    sync.Once
	pending atomic.Int64
}

func (c *probeCtx) Done() <-chan struct{} {
	c.once.Do(func() { c.pending.Store(int64(c.h.waiting())) })
	return c.Context.Done()
}

// Unacked counts what is on its way to a worker: offered and neither
// acknowledged nor reported. Attempts waiting for a worker with free
// capacity are not counted, and a dropped worker's count goes with it.
func TestUnackedCountsOffersUntilTheWorkerTakesThem(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	w := f.connect(hello("w1", "batch", 3))
	for range 4 { // one more than w1 takes
		f.submit(context.Background(), attemptIn("batch"))
	}
	var offered []*pb.WorkerAttempt
	for len(offered) < 3 {
		offered = append(offered, w.next().GetOffers().GetAttempts()...)
	}
	waitUnacked(t, f.h, 3)
	w.ack(offered[0])
	waitUnacked(t, f.h, 2)
	w.report(offered[1], pb.RunState_RUN_STATE_SUCCEEDED, "") // reported before any ack
	f.got.wait(t, offered[1].GetToken(), 1)
	// The fourth is offered now that w1 has room again.
	offered = append(offered, w.next().GetOffers().GetAttempts()...)
	waitUnacked(t, f.h, 2)
	w.ack(offered[0]) // again: counted once
	w.report(offered[0], pb.RunState_RUN_STATE_SUCCEEDED, "")
	f.got.wait(t, offered[0].GetToken(), 1)
	if n := f.h.Unacked(); n != 2 {
		t.Fatalf("Unacked() = %d after an acknowledged attempt was acknowledged again and reported, want 2", n)
	}
	w.cancel()
	waitUnacked(t, f.h, 0)
}

func waitUnacked(t *testing.T, h *Hub, want int) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, fmt.Sprintf("Unacked() = %d", want), func() bool { return h.Unacked() == want })
}
