package dispatch

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// gateExecutor blocks every attempt until release is closed or its context
// ends, and announces each attempt it starts.
type gateExecutor struct {
	started chan string
	release chan struct{}
}

func newGate() *gateExecutor {
	return &gateExecutor{started: make(chan string, 64), release: make(chan struct{})}
}

func (g *gateExecutor) Execute(ctx context.Context, a Attempt) Outcome {
	out := Outcome{StartedAt: time.Now()}
	g.started <- a.Job
	select {
	case <-g.release:
		return finish(out, pb.RunState_RUN_STATE_SUCCEEDED, "released")
	case <-ctx.Done():
		return finish(out, pb.RunState_RUN_STATE_CANCELLED, "cancelled: "+context.Cause(ctx).Error())
	}
}

type report struct {
	a   Attempt
	out Outcome
}

func collect() (chan report, func(Attempt, Outcome)) {
	ch := make(chan report, 64)
	return ch, func(a Attempt, o Outcome) { ch <- report{a, o} }
}

// submitNow calls Submit and fails the test if it does not return promptly.
func submitNow(t *testing.T, p *Pool, ctx context.Context, a Attempt, done func(Attempt, Outcome)) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- p.Submit(ctx, a, done) }()
	return receive(t, res, time.Second, "Submit returns without blocking")
}

func TestPoolQueueFullNeverBlocks(t *testing.T) {
	g := newGate()
	p := NewPool(1, 1, g, nil)
	defer p.Close()
	reports, done := collect()
	ctx := context.Background()

	if err := submitNow(t, p, ctx, Attempt{Job: "a"}, done); err != nil {
		t.Fatal(err)
	}
	receive(t, g.started, time.Second, "worker picks up a")
	if err := submitNow(t, p, ctx, Attempt{Job: "b"}, done); err != nil {
		t.Fatalf("queue slot: %v", err)
	}
	if err := submitNow(t, p, ctx, Attempt{Job: "c"}, done); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third submit = %v, want ErrQueueFull", err)
	}
	if n := p.InFlight(); n != 2 {
		t.Fatalf("InFlight = %d, want 2 (one running, one queued)", n)
	}
	close(g.release)
	got := map[string]bool{}
	for range 2 {
		r := receive(t, reports, 2*time.Second, "outcome")
		got[r.a.Job] = r.out.State == pb.RunState_RUN_STATE_SUCCEEDED
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("outcomes %v", got)
	}
	testutil.WaitFor(t, time.Second, "InFlight back to 0", func() bool { return p.InFlight() == 0 })
}

func TestPoolSlowTargetDoesNotDelayOtherJobs(t *testing.T) {
	slowArrived := make(chan struct{}, 1)
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			slowArrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	p := NewPool(2, 4, NewHTTPExecutor(nil), nil)
	defer p.Close()
	defer close(release) // runs first: p.Close and s.Close wait for the slow request
	reports, done := collect()

	slow := httpAttempt(s.URL + "/slow")
	slow.Job = "slow"
	if err := p.Submit(context.Background(), slow, done); err != nil {
		t.Fatal(err)
	}
	receive(t, slowArrived, 2*time.Second, "slow request reaches the target")

	fast := httpAttempt(s.URL + "/fast")
	fast.Job = "fast"
	if err := p.Submit(context.Background(), fast, done); err != nil {
		t.Fatal(err)
	}
	r := receive(t, reports, 2*time.Second, "fast attempt completes while slow is blocked")
	if r.a.Job != "fast" || r.out.State != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("first report %s %v %s, want fast succeeded", r.a.Job, r.out.State, r.out.Detail)
	}
	// done runs before the count drops, so the fast one may still be counted.
	testutil.WaitFor(t, time.Second, "InFlight = 1: only slow, still blocked", func() bool { return p.InFlight() == 1 })
}

// blockedTarget is a server whose requests wait until the client goes away;
// arrived counts the requests that reached it.
func blockedTarget(t *testing.T) (url string, arrived *atomic.Int32) {
	arrived = new(atomic.Int32)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-r.Context().Done()
	})
	return s.URL, arrived
}

func TestPoolLeadershipLossCancelsAllInFlight(t *testing.T) {
	url, arrived := blockedTarget(t)
	const workers = 4
	p := NewPool(workers, 2*workers, NewHTTPExecutor(nil), nil)
	defer p.Close()
	reports, done := collect()

	leader, loseLeadership := context.WithCancelCause(context.Background())
	for i := range workers + 2 { // two more than workers: they wait in the queue
		a := httpAttempt(url)
		a.Token = uint64(100 + i)
		actx, cancel := context.WithCancel(leader)
		defer cancel()
		if err := p.Submit(actx, a, done); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 5*time.Second, "every worker's request reaches the target",
		func() bool { return arrived.Load() == workers })

	loseLeadership(errors.New("leadership lost"))
	for range workers + 2 {
		r := receive(t, reports, 2*time.Second, "cancelled outcome")
		if r.out.State != pb.RunState_RUN_STATE_CANCELLED || !strings.HasPrefix(r.out.Detail, "cancelled: leadership lost") {
			t.Fatalf("token %d: %v %q, want CANCELLED by leadership loss", r.a.Token, r.out.State, r.out.Detail)
		}
	}
	testutil.WaitFor(t, time.Second, "InFlight back to 0", func() bool { return p.InFlight() == 0 })
}

// Attempts queued under a context that is done are reported without being
// delivered. (With one context per attempt derived from the leadership
// context, Go cancels the children one after another, so a queued attempt
// may still start in that instant; with the leadership context itself the
// cut is exact, which is what this test pins down.)
func TestPoolQueuedAttemptsNotDeliveredAfterCancel(t *testing.T) {
	url, arrived := blockedTarget(t)
	const workers = 2
	p := NewPool(workers, 8, NewHTTPExecutor(nil), nil)
	defer p.Close()
	reports, done := collect()

	leader, loseLeadership := context.WithCancelCause(context.Background())
	for range workers + 3 {
		if err := p.Submit(leader, httpAttempt(url), done); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 5*time.Second, "every worker's request reaches the target",
		func() bool { return arrived.Load() == workers })
	loseLeadership(errors.New("leadership lost"))
	never := 0
	for range workers + 3 {
		r := receive(t, reports, 2*time.Second, "cancelled outcome")
		if r.out.State != pb.RunState_RUN_STATE_CANCELLED {
			t.Fatalf("%v %q, want CANCELLED", r.out.State, r.out.Detail)
		}
		if strings.HasSuffix(r.out.Detail, "(never started)") {
			never++
		}
	}
	if n := arrived.Load(); n != workers || never != 3 {
		t.Fatalf("%d requests reached the target (want %d), %d attempts reported never started (want 3)", n, workers, never)
	}
}

func TestPoolCloseWaitsThenRejects(t *testing.T) {
	g := newGate()
	p := NewPool(2, 3, g, nil)
	var reported atomic.Int32
	done := func(Attempt, Outcome) { reported.Add(1) }
	for _, job := range []string{"a", "b", "c"} {
		if err := p.Submit(context.Background(), Attempt{Job: job}, done); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, g.started, time.Second, "first attempt starts")

	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	// Submits racing with Close may still be accepted; they must be
	// reported too.
	accepted := int32(3)
	testutil.WaitFor(t, time.Second, "Close stops accepting", func() bool {
		err := p.Submit(context.Background(), Attempt{Job: "late"}, done)
		if err == nil {
			accepted++
		}
		return errors.Is(err, ErrClosed)
	})
	// Close cannot have returned yet: the running attempts are held by the gate.
	select {
	case <-closed:
		t.Fatal("Close returned while attempts were running")
	default:
	}
	close(g.release)
	receive(t, closed, 2*time.Second, "Close returns")
	if n := reported.Load(); n != accepted {
		t.Fatalf("%d outcomes reported before Close returned, want %d", n, accepted)
	}
	p.Close() // idempotent
}

type panicExecutor struct{}

func (panicExecutor) Execute(context.Context, Attempt) Outcome { panic("boom") }

func TestPoolExecutorPanicBecomesFailure(t *testing.T) {
	clock := func() time.Time { return slot }
	p := NewPool(1, 1, panicExecutor{}, clock)
	defer p.Close()
	reports, done := collect()
	for range 2 { // the worker survives the first panic
		if err := submitNow(t, p, context.Background(), Attempt{Job: "x"}, done); err != nil && !errors.Is(err, ErrQueueFull) {
			t.Fatal(err)
		}
		r := receive(t, reports, time.Second, "outcome")
		wantState(t, r.out, pb.RunState_RUN_STATE_FAILED, "internal error: executor panicked: boom")
		if !r.out.StartedAt.Equal(slot) {
			t.Fatalf("StartedAt %v not from the pool's clock", r.out.StartedAt)
		}
	}
}

func TestPoolToleratesNilContextAndDone(t *testing.T) {
	g := newGate()
	close(g.release)
	p := NewPool(0, -1, g, nil) // clamped: 1 worker, no queue
	var ctx context.Context     // nil must not panic
	testutil.WaitFor(t, time.Second, "the idle worker accepts", func() bool { return p.Submit(ctx, Attempt{}, nil) == nil })
	p.Close()
	if n := p.InFlight(); n != 0 {
		t.Fatalf("InFlight after Close = %d", n)
	}
	if err := p.Submit(ctx, Attempt{}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close = %v, want ErrClosed", err)
	}
}
