package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// testService serves the hub as the api's WorkerService does on a leader,
// granting each session what its metadata says (grantMD), as the API grants
// what the session's token says.
type testService struct {
	pb.UnimplementedWorkerServiceServer
	h *Hub
}

func (s testService) Connect(stream pb.WorkerService_ConnectServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	var g Grant
	if v := md.Get("test-grant"); len(v) > 0 {
		if err := json.Unmarshal([]byte(v[0]), &g); err != nil {
			return err
		}
	}
	return s.h.Serve(stream, g)
}

// grantMD makes a connection carry its grant.
func grantMD(ctx context.Context, g Grant) context.Context {
	b, _ := json.Marshal(g)
	return metadata.AppendToOutgoingContext(ctx, "test-grant", string(b))
}

type fixture struct {
	t       *testing.T
	h       *Hub
	addr    string
	leading atomic.Bool
	got     *outcomes
}

// newFixture starts a hub behind a gRPC server on loopback.
func newFixture(t *testing.T, lease time.Duration) *fixture {
	t.Helper()
	f := &fixture{t: t, got: newOutcomes()}
	f.leading.Store(true)
	h, err := New(Config{Lease: lease, Leading: f.leading.Load})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterWorkerServiceServer(s, testService{h: h})
	go func() { _ = s.Serve(ln) }()
	f.addr = ln.Addr().String()
	t.Cleanup(func() {
		h.Close()
		s.Stop()
	})
	return f
}

// outcomes records what done reported, per token, in order.
type outcomes struct {
	mu      sync.Mutex
	byToken map[uint64][]dispatch.Outcome
	changed chan struct{}
}

func newOutcomes() *outcomes {
	return &outcomes{byToken: make(map[uint64][]dispatch.Outcome), changed: make(chan struct{})}
}

func (o *outcomes) done(a dispatch.Attempt, out dispatch.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byToken[a.Token] = append(o.byToken[a.Token], out)
	close(o.changed)
	o.changed = make(chan struct{})
}

// wait returns the n-th outcome of token, waiting up to 10 s for it.
func (o *outcomes) wait(t *testing.T, token uint64, n int) dispatch.Outcome {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		o.mu.Lock()
		got, ch := o.byToken[token], o.changed
		o.mu.Unlock()
		if len(got) >= n {
			return got[n-1]
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no outcome #%d of token %d within 10s (have %v)", n, token, got)
		}
	}
}

func (o *outcomes) count(token uint64) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byToken[token])
}

var nextToken atomic.Uint64

// attempt is a committed attempt of a command in pool.
func attemptIn(pool string) dispatch.Attempt {
	tok := nextToken.Add(1)
	return dispatch.Attempt{
		Job:         "render",
		RunID:       fmt.Sprintf("render-%d", tok),
		Token:       tok,
		Number:      1,
		ScheduledAt: time.Unix(1_800_000_000, 0).UTC(),
		Worker:      &pb.WorkerTarget{Pool: pool, Command: []string{"/bin/true"}},
		WaitUntil:   time.Now().Add(time.Minute),
	}
}

func (f *fixture) submit(ctx context.Context, a dispatch.Attempt) {
	f.t.Helper()
	if err := f.h.Submit(ctx, a, f.got.done); err != nil {
		f.t.Fatal(err)
	}
}

// rawWorker speaks the protocol by hand, so that a test can make it
// misbehave (stay silent, break off).
type rawWorker struct {
	t      *testing.T
	sendMu sync.Mutex // one sender at a time, as gRPC requires
	cancel context.CancelFunc
	stream pb.WorkerService_ConnectClient
	msgs   chan *pb.ConnectResponse
	ended  chan error
}

func (f *fixture) connect(hello *pb.WorkerHello) *rawWorker {
	f.t.Helper()
	w, err := f.dial(hello)
	if err != nil {
		f.t.Fatalf("connect %s: %v", hello.GetId(), err)
	}
	return w
}

// connectAs connects a session granted g.
func (f *fixture) connectAs(hello *pb.WorkerHello, g Grant) *rawWorker {
	f.t.Helper()
	w, err := f.dialAs(hello, g)
	if err != nil {
		f.t.Fatalf("connect %s: %v", hello.GetId(), err)
	}
	return w
}

// dial connects, sends hello and waits for the welcome.
func (f *fixture) dial(hello *pb.WorkerHello) (*rawWorker, error) {
	return f.dialAs(hello, Grant{})
}

func (f *fixture) dialAs(hello *pb.WorkerHello, g Grant) (*rawWorker, error) {
	cc, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	f.t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	stream, err := pb.NewWorkerServiceClient(cc).Connect(grantMD(ctx, g))
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Hello{Hello: hello}}); err != nil {
		return nil, err
	}
	m, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if m.GetWelcome() == nil {
		return nil, fmt.Errorf("first message %v, want a welcome", m)
	}
	w := &rawWorker{t: f.t, cancel: cancel, stream: stream, msgs: make(chan *pb.ConnectResponse, 100), ended: make(chan error, 1)}
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				w.ended <- err
				return
			}
			w.msgs <- m
		}
	}()
	return w, nil
}

func hello(id, pool string, concurrency uint32) *pb.WorkerHello {
	return &pb.WorkerHello{Id: id, Pool: pool, Concurrency: concurrency, Commands: true}
}

// offers waits for n offered attempts (acknowledging them), in one or
// more messages, and returns them and how many messages carried them.
func (w *rawWorker) offers(n int) ([]*pb.WorkerAttempt, int) {
	w.t.Helper()
	var got []*pb.WorkerAttempt
	msgs := 0
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case m := <-w.msgs:
			if o := m.GetOffers(); o != nil {
				got = append(got, o.GetAttempts()...)
				msgs++
				w.ack(o.GetAttempts()...)
			}
		case err := <-w.ended:
			w.t.Fatalf("stream ended after %d of %d offers: %v", len(got), n, err)
		case <-deadline:
			w.t.Fatalf("%d of %d offers within 10s", len(got), n)
		}
	}
	return got, msgs
}

// next waits for the next message that is not a heartbeat.
func (w *rawWorker) next() *pb.ConnectResponse {
	w.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-w.msgs:
			if m.GetHeartbeat() == nil {
				return m
			}
		case err := <-w.ended:
			w.t.Fatalf("stream ended: %v", err)
		case <-deadline:
			w.t.Fatal("no message within 10s")
		}
	}
}

// sync returns once the hub has handled everything sent before it: it
// echoes a heartbeat after the messages that came before.
func (w *rawWorker) sync() {
	w.t.Helper()
	w.send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Heartbeat{Heartbeat: &pb.WorkerHeartbeat{}}})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-w.msgs:
			if m.GetHeartbeat() != nil {
				return
			}
		case err := <-w.ended:
			w.t.Fatalf("stream ended: %v", err)
		case <-deadline:
			w.t.Fatal("no heartbeat echoed within 10s")
		}
	}
}

// quiet fails if an offer arrives within d.
func (w *rawWorker) quiet(d time.Duration) {
	w.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-w.msgs:
			if m.GetOffers() != nil {
				w.t.Fatalf("unexpected offer %v", m.GetOffers())
			}
		case <-deadline:
			return
		}
	}
}

// end waits for the stream to end and returns its error.
func (w *rawWorker) end() error {
	w.t.Helper()
	select {
	case err := <-w.ended:
		return err
	case <-time.After(10 * time.Second):
		w.t.Fatal("stream still open after 10s")
		return nil
	}
}

func (w *rawWorker) send(m *pb.ConnectRequest) {
	w.t.Helper()
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	if err := w.stream.Send(m); err != nil {
		w.t.Fatalf("send: %v", err)
	}
}

func (w *rawWorker) ack(as ...*pb.WorkerAttempt) {
	tokens := make([]uint64, len(as))
	for i, a := range as {
		tokens[i] = a.GetToken()
	}
	w.send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Acks{Acks: &pb.WorkerAcks{Tokens: tokens}}})
}

func (w *rawWorker) report(a *pb.WorkerAttempt, state pb.RunState, detail string) {
	w.send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Outcomes{Outcomes: &pb.WorkerOutcomes{Outcomes: []*pb.WorkerOutcome{{
		RunId: a.GetRunId(), Token: a.GetToken(), State: state, Detail: detail,
	}}}}})
}

// heartbeat keeps the lease until the returned func is called.
func (w *rawWorker) heartbeat(every time.Duration) func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				w.sendMu.Lock()
				err := w.stream.Send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Heartbeat{Heartbeat: &pb.WorkerHeartbeat{}}})
				w.sendMu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop) }) }
}

// room is how many attempts worker id takes now.
func (h *Hub) room(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.conns[id]; c != nil {
		return c.room()
	}
	return 0
}
