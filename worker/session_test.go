package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// testSession is a session without a stream, for the bookkeeping of take,
// stop and finished; its handler "hold" counts its calls and returns once
// release is closed.
func testSession(t *testing.T) (s *session, calls *atomic.Int64, release chan struct{}) {
	t.Helper()
	w, err := New(Config{ID: "w1", Pool: "batch", Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	calls, release = new(atomic.Int64), make(chan struct{})
	if err := w.Handle("hold", func(context.Context, Run) error {
		calls.Add(1)
		<-release
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return w.newSession(ctx, cancel, nil, time.Minute), calls, release
}

func holdOffer(token uint64) *pb.WorkerAttempt {
	return &pb.WorkerAttempt{Job: "billing", RunId: "billing-1", Token: token, Attempt: 1,
		Target: &pb.WorkerTarget{Pool: "batch", Handler: "hold", Timeout: durationpb.New(time.Hour)}}
}

// waitOutcomes takes n outcomes from the worker's outbox, waiting up to
// 10 s.
func waitOutcomes(t *testing.T, w *Worker, n int) []*pb.WorkerOutcome {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var got []*pb.WorkerOutcome
	for len(got) < n {
		select {
		case <-w.out.signal:
			got = append(got, w.out.take(maxOutcomesPerMessage)...)
		case <-deadline:
			t.Fatalf("%d of %d outcomes within 10s", len(got), n)
		}
	}
	return got
}

// An offer the worker runs already, in the same message or a later one,
// is acknowledged again and not run twice.
func TestDuplicateOffersRunOnce(t *testing.T) {
	t.Parallel()
	s, calls, release := testSession(t)
	s.take([]*pb.WorkerAttempt{holdOffer(7), holdOffer(7)})
	s.mu.Lock()
	first := s.running[7]
	s.mu.Unlock()
	s.take([]*pb.WorkerAttempt{holdOffer(7)})

	s.mu.Lock()
	running, held := len(s.running), s.running[7]
	s.mu.Unlock()
	if running != 1 || held != first {
		t.Fatalf("%d attempts held (the first: %v), want the first offer's alone", running, held == first)
	}
	if acks := s.takeAcks(); len(acks) != 3 {
		t.Fatalf("acks %v, want token 7 three times", acks)
	}
	close(release)
	if o := waitOutcomes(t, s.w, 1); o[0].GetToken() != 7 || o[0].GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("outcome %v, want token 7 SUCCEEDED", o[0])
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler called %d times, want once", n)
	}
}

// A leader's cancel may reach an attempt between take's bookkeeping and
// its start: it is reported then, and start must not leave its limit's
// timer armed (it would hold the attempt until the limit).
func TestCancelBeforeStartStopsTheLimit(t *testing.T) {
	t.Parallel()
	s, _, release := testSession(t)
	close(release)
	at := s.newAttempt(holdOffer(9))
	s.mu.Lock()
	s.running[9] = at
	s.mu.Unlock()
	s.stop([]uint64{9}, "run cancelled by alice")
	at.start()
	if o := waitOutcomes(t, s.w, 1); o[0].GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Fatalf("outcome %v, want CANCELLED", o[0])
	}
	if !errors.Is(context.Cause(at.ctx), cancelledByLeader{"run cancelled by alice"}) {
		t.Fatalf("cause %v, want the leader's cancel", context.Cause(at.ctx))
	}
	if at.limit.Load().Stop() {
		t.Fatal("the limit's timer was still armed after the attempt was reported")
	}
}
