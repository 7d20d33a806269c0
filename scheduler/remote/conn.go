package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxConcurrency is the most attempts a worker may declare it runs at once.
const MaxConcurrency = 100_000

// Bounds of what a worker may declare.
const (
	MaxHandlers = 1000
	MaxTags     = 64
)

// Grant is what the credentials a worker session was opened with allow, as
// the API authenticated them.
type Grant struct {
	// Token identifies them (an ACL token's accessor ID; empty without
	// one). A lost attempt's late outcome is taken only from a session of
	// the same worker ID and Token: the worker ID is the worker's own
	// claim, which any other worker could make.
	Token string
	// Pools the session may serve; empty: any.
	Pools []string
	// MaxConcurrency caps the concurrency the session declares; 0: only
	// MaxConcurrency does.
	MaxConcurrency int
}

// admits refuses a hello its grant does not cover. A concurrency above the
// cap is refused rather than lowered: a worker that believes it runs more
// than it is offered is misconfigured, and should say so at once.
func (g Grant) admits(m *pb.WorkerHello) error {
	return g.allows(m.GetPool(), int(m.GetConcurrency()), "hello.pool", "hello.concurrency")
}

// allows refuses a pool the grant does not name and n attempts at once
// beyond its cap, naming the fields that ask for them.
func (g Grant) allows(pool string, n int, poolField, nField string) error {
	if len(g.Pools) > 0 && !slices.Contains(g.Pools, pool) {
		return status.Errorf(codes.PermissionDenied, "%s: this worker's ACL token may serve the pools %s, not %q",
			poolField, strings.Join(g.Pools, ", "), pool)
	}
	if g.MaxConcurrency > 0 && n > g.MaxConcurrency {
		return status.Errorf(codes.PermissionDenied, "%s: %d is more than the %d this worker's ACL token allows",
			nField, n, g.MaxConcurrency)
	}
	return nil
}

// Why a worker's stream ends; the worker sees the message.
var (
	errNotLeading   = status.Error(codes.Unavailable, "this node no longer leads: connect to the leader")
	errShuttingDown = status.Error(codes.Unavailable, "the node is shutting down: connect to the leader")
	errNoAck        = status.Error(codes.Unavailable, "an offer was not acknowledged within the lease")
	errStreamBroke  = errors.New("its stream broke (the worker stopped, or the network failed)")
)

// leaseError ends the stream of a worker that went silent.
type leaseError struct{ lease time.Duration }

func (e leaseError) Error() string {
	return fmt.Sprintf("no message from the worker within its lease of %s", e.lease)
}

func (e leaseError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.Error()) }

// conn is one worker: a connected stream, or an HTTP worker's session
// (http, poll.go), which has no stream, outbox or lastSeen.
type conn struct {
	id, pool string
	token    string // Grant.Token
	tags     map[string]string
	handlers map[string]bool
	commands bool
	// concurrency is what a stream declared; for an HTTP worker, its
	// grant's cap on the attempts it holds (0: none).
	concurrency int
	out         *outbox
	// lastSeen is when the worker last sent anything (Unix nanoseconds).
	lastSeen atomic.Int64
	cancel   context.CancelCauseFunc
	http     bool

	// Guarded by Hub.mu.
	inflight map[uint64]*attempt
	// unacked counts the attempts of inflight the worker has not
	// acknowledged yet.
	unacked   int
	lastOffer uint64
	gone      bool
	// polls are an HTTP worker's open polls, oldest first; lastPoll is
	// when one last ended.
	polls    []*poll
	lastPoll time.Time
}

func newConn(hello *pb.WorkerHello, token string, signer *dispatch.Signer, cancel context.CancelCauseFunc) *conn {
	c := &conn{
		id:          hello.GetId(),
		pool:        hello.GetPool(),
		token:       token,
		tags:        hello.GetTags(),
		handlers:    make(map[string]bool, len(hello.GetHandlers())),
		commands:    hello.GetCommands(),
		concurrency: int(hello.GetConcurrency()),
		out:         newOutbox(signer),
		cancel:      cancel,
		inflight:    make(map[uint64]*attempt),
	}
	for _, name := range hello.GetHandlers() {
		c.handlers[name] = true
	}
	c.lastSeen.Store(time.Now().UnixNano())
	return c
}

func (c *conn) end(cause error) { c.cancel(cause) }

// full, load, room, eligible and unackedSince are called under Hub.mu.
func (c *conn) full() bool { return c.room() <= 0 }

// load is the share of its room that c uses.
func (c *conn) load() float64 {
	if c.http {
		return float64(len(c.inflight)) / float64(len(c.inflight)+max(c.room(), 1))
	}
	return float64(len(c.inflight)) / float64(c.concurrency)
}

// room is how many more attempts c takes now: a stream, up to its
// concurrency; an HTTP worker, what its open polls ask for, within its cap.
func (c *conn) room() int {
	if !c.http {
		return c.concurrency - len(c.inflight)
	}
	n := 0
	for _, p := range c.polls {
		n += p.room()
	}
	if c.concurrency > 0 {
		n = min(n, c.concurrency-len(c.inflight))
	}
	return n
}

func (c *conn) String() string { return c.id }
func (c *conn) hasTags(t map[string]string) bool {
	for k, v := range t {
		if got, ok := c.tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// eligible reports whether c may run a: its tags carry the target's, and
// it registered the handler, or runs commands.
func (c *conn) eligible(a dispatch.Attempt) bool {
	w := a.Worker
	if !c.hasTags(w.GetTags()) {
		return false
	}
	if w.GetHandler() != "" {
		return c.handlers[w.GetHandler()]
	}
	return c.commands
}

// unackedSince reports an offer older than lease that the worker never
// acknowledged: it is connected but not taking work.
func (c *conn) unackedSince(now time.Time, lease time.Duration) bool {
	for _, at := range c.inflight {
		if !at.acked && now.Sub(at.offeredAt) > lease {
			return true
		}
	}
	return false
}

// Serve runs one worker's stream until it ends: hello, welcome, then
// offers and cancels out, acknowledgements, heartbeats and outcomes in.
// The caller (the WorkerService) has checked that this node leads, and
// grants what the session's credentials allow.
func (h *Hub) Serve(stream pb.WorkerService_ConnectServer, grant Grant) error {
	hello, err := h.hello(stream)
	if err != nil {
		return err
	}
	if err := grant.admits(hello); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	c := newConn(hello, grant.Token, h.signer, cancel)
	if err := h.register(c); err != nil {
		return err
	}
	// Offers wait in the outbox until the send loop starts, after this.
	if err := stream.Send(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Welcome{Welcome: &pb.WorkerWelcome{
		Lease: durationpb.New(h.lease), Progress: true,
	}}}); err != nil {
		h.drop(c, err)
		return err
	}
	// Neither goroutine is waited for: a Send blocked on a worker that
	// stopped reading (a paused process) returns only once this handler
	// has returned and the stream is torn down.
	go c.out.sendLoop(ctx, stream, cancel)
	go h.receive(ctx, c, stream, cancel)
	<-ctx.Done()
	cause := context.Cause(ctx)
	if stream.Context().Err() != nil {
		cause = errStreamBroke
	}
	h.drop(c, cause)
	if errors.Is(cause, io.EOF) || cause == errStreamBroke {
		return nil // the worker went away
	}
	return cause
}

// hello reads and checks the worker's first message, waiting at most a
// lease for it.
func (h *Hub) hello(stream pb.WorkerService_ConnectServer) (*pb.WorkerHello, error) {
	type result struct {
		m   *pb.ConnectRequest
		err error
	}
	got := make(chan result, 1)
	go func() {
		m, err := stream.Recv()
		got <- result{m, err}
	}()
	t := time.NewTimer(h.lease)
	defer t.Stop()
	var r result
	select {
	case r = <-got:
	case <-t.C:
		return nil, status.Errorf(codes.DeadlineExceeded, "no hello within %s", h.lease)
	}
	if r.err != nil {
		return nil, r.err
	}
	hello := r.m.GetHello()
	if hello == nil {
		return nil, status.Error(codes.InvalidArgument, "hello: the first message must be a hello")
	}
	return hello, checkHello(hello)
}

// checkHello refuses a hello that breaks a rule, naming the field.
func checkHello(m *pb.WorkerHello) error {
	var problems []string
	if err := jobspec.ValidateName(m.GetId()); err != nil {
		problems = append(problems, "hello.id: "+jobspec.NameRule)
	}
	if err := jobspec.ValidateName(m.GetPool()); err != nil {
		problems = append(problems, "hello.pool: "+jobspec.NameRule)
	}
	if n := m.GetConcurrency(); n < 1 || n > MaxConcurrency {
		problems = append(problems, fmt.Sprintf("hello.concurrency: must be between 1 and %d", MaxConcurrency))
	}
	if len(m.GetTags()) > MaxTags {
		problems = append(problems, fmt.Sprintf("hello.tags: at most %d", MaxTags))
	}
	if len(m.GetHandlers()) > MaxHandlers {
		problems = append(problems, fmt.Sprintf("hello.handlers: at most %d", MaxHandlers))
	}
	if len(problems) == 0 {
		return nil
	}
	return status.Error(codes.InvalidArgument, joinProblems(problems))
}

func joinProblems(p []string) string {
	out := p[0]
	for _, s := range p[1:] {
		out += "; " + s
	}
	return out
}

// register adds c. A second connection under a live worker's ID is
// refused rather than let in: two workers configured with one ID would
// otherwise take turns dropping each other, losing attempts every time. A
// restarted worker whose old stream still looks alive gets in once that
// stream breaks or misses its lease.
func (h *Hub) register(c *conn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Under mu, so that Close, which drops the workers it finds under mu
	// after closing, finds this one or refuses it here.
	h.inMu.Lock()
	closed := h.closed
	h.inMu.Unlock()
	if closed {
		return errShuttingDown
	}
	if old := h.conns[c.id]; old != nil && old.http {
		return status.Errorf(codes.AlreadyExists,
			"worker %s polls over HTTP (worker IDs must be unique; the ID is free once that worker holds no attempt and has not polled for the lease of %s)",
			c.id, h.lease)
	} else if old != nil {
		return status.Errorf(codes.AlreadyExists,
			"worker %s is already connected (worker IDs must be unique; a restarted worker gets in once its old stream is gone, within the lease of %s)",
			c.id, h.lease)
	}
	h.conns[c.id] = c
	h.metrics.connected.WithLabelValues(c.pool).Inc()
	h.log.Info("worker connected", "worker", c.id, "pool", c.pool, "concurrency", c.concurrency,
		"tags", c.tags, "handlers", len(c.handlers), "commands", c.commands)
	h.kick()
	return nil
}

// receive reads the worker's messages until the stream ends.
func (h *Hub) receive(ctx context.Context, c *conn, stream pb.WorkerService_ConnectServer, cancel context.CancelCauseFunc) {
	for {
		m, err := stream.Recv()
		if err != nil {
			cancel(err)
			return
		}
		c.lastSeen.Store(time.Now().UnixNano())
		switch msg := m.GetMsg().(type) {
		case *pb.ConnectRequest_Heartbeat:
			c.out.addHeartbeat()
			c.out.notify()
		case *pb.ConnectRequest_Acks:
			h.acked(c, msg.Acks.GetTokens())
		case *pb.ConnectRequest_Outcomes:
			h.outcomes(c, msg.Outcomes.GetOutcomes())
		case *pb.ConnectRequest_Progress:
			h.streamProgress(c, msg.Progress.GetAttempts())
		default:
			cancel(status.Error(codes.InvalidArgument, "after hello, a worker sends heartbeats, acks, outcomes and progress only"))
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (h *Hub) acked(c *conn, tokens []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range tokens {
		if at := c.inflight[t]; at != nil && !at.acked {
			at.acked = true
			c.unacked--
		}
	}
}

// report is an outcome on its way to its attempt's done.
type report struct {
	at *attempt
	o  dispatch.Outcome
}

// outcomes takes what the worker reports: of attempts it holds, and late
// ones of attempts it lost.
func (h *Hub) outcomes(c *conn, outs []*pb.WorkerOutcome) {
	now := time.Now()
	var reports []report
	h.mu.Lock()
	for _, o := range outs {
		at := c.inflight[o.GetToken()]
		switch {
		case at != nil && at.a.RunID == o.GetRunId():
			delete(c.inflight, o.GetToken())
			if !at.acked {
				c.unacked--
			}
			at.state = stateFinished
			reports = append(reports, report{at, outcome(c.id, at, o, now)})
		case h.isLateOf(c, o):
			// A late cancel says nothing: the worker gave up what it had lost.
			at := h.lost[o.GetToken()]
			delete(h.lost, o.GetToken())
			at.state = stateFinished
			if o.GetState() != pb.RunState_RUN_STATE_CANCELLED {
				reports = append(reports, report{at, outcome(c.id, at, o, now)})
			}
		default:
			h.log.Debug("worker reported an attempt it does not hold", "worker", c.id,
				"run_id", o.GetRunId(), "token", o.GetToken())
		}
	}
	h.mu.Unlock()
	for _, r := range reports {
		r.at.stopWatch()
		r.at.done(r.at.a, r.o)
	}
	if len(reports) > 0 {
		h.kick() // capacity freed
	}
}

// isLateOf reports whether o is the late outcome of an attempt c's worker
// lost: the worker ID and the token of the session that lost it. Called
// under mu.
func (h *Hub) isLateOf(c *conn, o *pb.WorkerOutcome) bool {
	at := h.lost[o.GetToken()]
	return at != nil && at.lostBy == c.id && at.lostToken == c.token && at.a.RunID == o.GetRunId()
}

// outbox collects what goes to one worker; its send loop sends it in as
// few messages as it can.
type outbox struct {
	signer *dispatch.Signer

	mu sync.Mutex
	// offers are turned into their wire form by the send loop, not under
	// the hub's lock.
	offers  []*attempt
	cancels map[string][]uint64 // by reason
	beats   int
	signal  chan struct{} // cap 1
}

func newOutbox(signer *dispatch.Signer) *outbox {
	return &outbox{signer: signer, signal: make(chan struct{}, 1)}
}

func (o *outbox) addOffer(a *attempt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.offers = append(o.offers, a)
}

func (o *outbox) addCancel(token uint64, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancels == nil {
		o.cancels = make(map[string][]uint64)
	}
	o.cancels[reason] = append(o.cancels[reason], token)
}

func (o *outbox) addHeartbeat() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.beats++
}

func (o *outbox) notify() {
	select {
	case o.signal <- struct{}{}:
	default:
	}
}

// take empties the outbox. The messages it yields, offers first and in
// batches, take their wire form one at a time as they are sent: after
// unlocking (the pump adds to the outbox under the hub's lock), and with
// the first batch of a burst on its way while the next are built.
func (o *outbox) take() iter.Seq[*pb.ConnectResponse] {
	o.mu.Lock()
	offers, cancels, beats := o.offers, o.cancels, o.beats
	o.offers, o.cancels, o.beats = nil, nil, 0
	o.mu.Unlock()
	return func(yield func(*pb.ConnectResponse) bool) {
		for len(offers) > 0 {
			n := min(len(offers), maxOffersPerMessage)
			batch := make([]*pb.WorkerAttempt, n)
			for i, at := range offers[:n] {
				batch[i] = wireAttempt(at.a, o.signer)
			}
			offers = offers[n:]
			if !yield(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Offers{Offers: &pb.WorkerOffers{Attempts: batch}}}) {
				return
			}
		}
		for reason, tokens := range cancels {
			if !yield(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Cancels{Cancels: &pb.WorkerCancels{
				Tokens: tokens, Reason: reason,
			}}}) {
				return
			}
		}
		if beats > 0 {
			yield(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Heartbeat{Heartbeat: &pb.WorkerHeartbeat{}}})
		}
	}
}

// sendLoop sends what collects in the outbox until ctx ends; a failed send
// ends the stream.
func (o *outbox) sendLoop(ctx context.Context, stream pb.WorkerService_ConnectServer, cancel context.CancelCauseFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.signal:
		}
		for m := range o.take() {
			if err := stream.Send(m); err != nil {
				cancel(err)
				return
			}
		}
	}
}
