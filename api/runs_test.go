package api

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func sampleRun(job string, token uint64) *pb.Run {
	return &pb.Run{
		Id: fmt.Sprintf("%s-%d", job, token), Job: job, Generation: 1, SlotUnix: testNow.Unix() + int64(token),
		Kind: pb.FireKind_FIRE_KIND_SCHEDULED, State: pb.RunState_RUN_STATE_DISPATCHED,
		Attempts:          []*pb.Attempt{{Number: 1, Token: token, State: pb.RunState_RUN_STATE_DISPATCHED}},
		CreatedAtUnixNano: testNow.UnixNano() + int64(token),
	}
}

func runIDs(runs []*pb.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.GetId())
	}
	return ids
}

func TestListRuns(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	for i := uint64(1); i <= 4; i++ {
		job := "a"
		if i%2 == 0 {
			job = "b"
		}
		h.store.addRun(sampleRun(job, i))
	}
	barriers := h.store.barrierCount()
	resp, err := h.runs.ListRuns(ctx, &pb.ListRunsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(resp.GetRuns()); !slices.Equal(got, []string{"b-4", "a-3", "b-2", "a-1"}) {
		t.Fatalf("runs %v, want newest first", got)
	}
	if q := h.store.lastRunQuery(); q.Job != "" || q.Limit != defaultRunLimit || q.MaxScan != maxRunScan {
		t.Errorf("ledger asked for %+v, want every job, limit %d, at most %d runs looked at", q, defaultRunLimit, maxRunScan)
	}
	if h.store.barrierCount() != barriers+1 {
		t.Error("ListRuns without stale read without a barrier")
	}

	resp, err = h.runs.ListRuns(ctx, &pb.ListRunsRequest{Job: "a", Limit: 5000, Stale: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(resp.GetRuns()); !slices.Equal(got, []string{"a-3", "a-1"}) {
		t.Fatalf("job a: %v", got)
	}
	if q := h.store.lastRunQuery(); q.Job != "a" || q.Limit != maxRunLimit {
		t.Errorf("ledger asked for %+v, want job a, limit capped at %d", q, maxRunLimit)
	}
	if h.store.barrierCount() != barriers+1 {
		t.Error("a stale ListRuns waited for a barrier")
	}

	t.Run("bad job filter", func(t *testing.T) {
		_, err := h.runs.ListRuns(ctx, &pb.ListRunsRequest{Job: "Bad Name"})
		st := wantCode(t, err, codes.InvalidArgument)
		if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"job"}) {
			t.Errorf("fields %v, want [job]", fields)
		}
	})
	t.Run("barrier failure", func(t *testing.T) {
		h.store.mu.Lock()
		h.store.barrierErr = errFakeNoLeader
		h.store.mu.Unlock()
		defer func() {
			h.store.mu.Lock()
			h.store.barrierErr = nil
			h.store.mu.Unlock()
		}()
		_, err := h.runs.ListRuns(ctx, &pb.ListRunsRequest{})
		wantCode(t, err, codes.Unavailable)
	})
}

func TestGetRun(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	h.store.addRun(sampleRun("a", 7))
	resp, err := h.runs.GetRun(ctx, &pb.GetRunRequest{Id: "a-7"})
	if err != nil || resp.GetRun().GetAttempts()[0].GetToken() != 7 {
		t.Fatalf("GetRun: %v, %v", resp, err)
	}
	_, err = h.runs.GetRun(ctx, &pb.GetRunRequest{Id: "a-8"})
	wantCode(t, err, codes.NotFound)
	_, err = h.runs.GetRun(ctx, &pb.GetRunRequest{})
	st := wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"id"}) {
		t.Errorf("fields %v, want [id]", fields)
	}
}

// openWatch starts WatchRuns and waits until the watch is in place (the
// server sends the headers after subscribing).
func openWatch(t *testing.T, h *harness, ctx context.Context, job string) grpc.ServerStreamingClient[pb.WatchRunsResponse] {
	t.Helper()
	stream, err := h.runs.WatchRuns(ctx, &pb.WatchRunsRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("watch headers: %v", err)
	}
	return stream
}

func recvRun(t *testing.T, stream grpc.ServerStreamingClient[pb.WatchRunsResponse]) string {
	t.Helper()
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return resp.GetRun().GetId()
}

func TestWatchRunsStreamsPublishedRuns(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	all := openWatch(t, h, ctx, "")
	onlyB := openWatch(t, h, ctx, "b")
	if n := h.hub.Watchers(); n != 2 {
		t.Fatalf("%d watchers, want 2", n)
	}
	h.hub.RunsChanged(fsm.Origin{}, []*pb.Run{sampleRun("a", 1), sampleRun("b", 2)})
	h.hub.RunsChanged(fsm.Origin{}, []*pb.Run{sampleRun("b", 3)})
	var got []string
	for range 3 {
		got = append(got, recvRun(t, all))
	}
	if !slices.Equal(got, []string{"a-1", "b-2", "b-3"}) {
		t.Fatalf("unfiltered watch got %v", got)
	}
	if a, b := recvRun(t, onlyB), recvRun(t, onlyB); a != "b-2" || b != "b-3" {
		t.Fatalf("watch of job b got %s, %s", a, b)
	}
	cancel()
	testutil.WaitFor(t, 5*time.Second, "watchers to unsubscribe", func() bool { return h.hub.Watchers() == 0 })

	t.Run("bad job filter", func(t *testing.T) {
		stream, err := h.runs.WatchRuns(testCtx(t), &pb.WatchRunsRequest{Job: "Bad Name"})
		if err == nil {
			_, err = stream.Recv()
		}
		wantCode(t, err, codes.InvalidArgument)
	})
}

func mustSubscribe(t *testing.T, hub *RunHub, job string) (*runWatch, func()) {
	t.Helper()
	w, cancel, err := hub.subscribe(job)
	if err != nil {
		t.Fatal(err)
	}
	return w, cancel
}

func TestRunHubDropsSlowWatcherWithoutBlocking(t *testing.T) {
	hub := NewRunHub()
	hub.buffer = 2
	slow, cancelSlow := mustSubscribe(t, hub, "")
	defer cancelSlow()
	fast, cancelFast := mustSubscribe(t, hub, "")
	defer cancelFast()

	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := uint64(1); i <= 3; i++ {
			hub.RunsChanged(fsm.Origin{}, []*pb.Run{sampleRun("a", i)})
			<-fast.ch // the fast watcher keeps up
		}
	}()
	select {
	case <-published:
	case <-time.After(5 * time.Second):
		t.Fatal("RunsChanged blocked on a watcher that does not read")
	}
	select {
	case <-slow.end:
	default:
		t.Fatal("the slow watcher was not dropped")
	}
	select {
	case <-fast.end:
		t.Fatal("the watcher that kept up was dropped")
	default:
	}
	if n := hub.Watchers(); n != 1 {
		t.Fatalf("%d watchers, want only the fast one", n)
	}
	// A dropped watcher keeps what it had; nothing more arrives.
	if len(slow.ch) != 2 {
		t.Fatalf("slow watcher holds %d runs, want its full buffer of 2", len(slow.ch))
	}
	hub.RunsChanged(fsm.Origin{}, []*pb.Run{sampleRun("a", 9)})
	if len(slow.ch) != 2 || len(fast.ch) != 1 {
		t.Fatalf("after the drop: slow %d, fast %d runs", len(slow.ch), len(fast.ch))
	}
}

// blockingStream is a WatchRuns server stream whose Send waits for release.
type blockingStream struct {
	grpc.ServerStream
	ctx     context.Context
	release chan struct{}
	sent    chan *pb.Run
}

func (s *blockingStream) Context() context.Context     { return s.ctx }
func (s *blockingStream) SendHeader(metadata.MD) error { return nil }
func (s *blockingStream) Send(r *pb.WatchRunsResponse) error {
	<-s.release
	s.sent <- r.GetRun()
	return nil
}

func TestWatchRunsEndsWhenItFallsBehind(t *testing.T) {
	hub := NewRunHub()
	hub.buffer = 1
	svc := NewRunService(Deps{Barrier: newFakeStore(), Ledger: newFakeStore(), Hub: hub})
	stream := &blockingStream{ctx: testCtx(t), release: make(chan struct{}), sent: make(chan *pb.Run, 10)}
	done := make(chan error, 1)
	go func() { done <- svc.WatchRuns(&pb.WatchRunsRequest{}, stream) }()
	testutil.WaitFor(t, 5*time.Second, "the watch to subscribe", func() bool { return hub.Watchers() == 1 })

	// One run may sit in Send and one in the buffer: the third overflows.
	returned := make(chan struct{})
	go func() {
		hub.RunsChanged(fsm.Origin{}, []*pb.Run{sampleRun("a", 1), sampleRun("a", 2), sampleRun("a", 3)})
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("RunsChanged blocked behind a stuck stream")
	}
	close(stream.release)
	select {
	case err := <-done:
		st, _ := status.FromError(err)
		if st.Code() != codes.ResourceExhausted || st.Message() != WatchBehindMessage {
			t.Fatalf("watch ended with %v, want ResourceExhausted %q", err, WatchBehindMessage)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the dropped watch did not end")
	}
	if hub.Watchers() != 0 {
		t.Fatal("the dropped watch is still subscribed")
	}
}

func TestWatchRunsWithoutHub(t *testing.T) {
	svc := NewRunService(Deps{Barrier: newFakeStore(), Ledger: newFakeStore()})
	err := svc.WatchRuns(&pb.WatchRunsRequest{}, &blockingStream{ctx: context.Background()})
	wantCode(t, err, codes.Unimplemented)
}

func TestRunHubCloseEndsWatches(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	stream := openWatch(t, h, ctx, "")
	h.hub.Close()
	_, err := stream.Recv()
	wantCode(t, err, codes.Unavailable)
	// A watch opened after Close ends at once.
	later, err := h.runs.WatchRuns(ctx, &pb.WatchRunsRequest{})
	if err == nil {
		_, err = later.Recv()
	}
	wantCode(t, err, codes.Unavailable)
	if h.hub.Watchers() != 0 {
		t.Fatal("watchers left after Close")
	}
}
