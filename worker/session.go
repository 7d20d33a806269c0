package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// errLeaseLost ends a session whose leader went silent for a lease; the
// leader has given this worker's attempts up by then.
var errLeaseLost = errors.New("nothing heard from the leader within the lease")

// maxOutcomesPerMessage caps one WorkerOutcomes message.
const maxOutcomesPerMessage = 1000

// session is one stream to a node: hello, then offers and cancels in,
// acknowledgements, heartbeats and outcomes out. Its attempts live as
// long as it does.
type session struct {
	w      *Worker
	stream pb.WorkerService_ConnectClient
	ctx    context.Context
	base   context.Context // ctx's values without its cancellation, for attempts
	cancel context.CancelCauseFunc
	lease  time.Duration
	heard  atomic.Int64 // when the leader last sent anything (Unix nanoseconds)
	// takesProgress: the leader's welcome says it takes WorkerProgress (a
	// leader of an earlier release ends a stream that sends one).
	takesProgress bool

	mu      sync.Mutex // guards running, acks and progress
	running map[uint64]*attempt
	acks    []uint64
	// progress holds each attempt's latest report not yet sent, by token.
	progress map[uint64]*pb.AttemptProgress
	signal   chan struct{} // cap 1: acks to send
}

// session runs one stream to addr until it ends, and returns why.
func (w *Worker) session(parent context.Context, addr string) error {
	cc, err := w.conn(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stream, err := pb.NewWorkerServiceClient(cc).Connect(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&pb.ConnectRequest{Msg: &pb.ConnectRequest_Hello{Hello: w.hello()}}); err != nil {
		return recvErr(stream, err)
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	welcome := first.GetWelcome()
	if welcome == nil || welcome.GetLease().AsDuration() <= 0 {
		return fmt.Errorf("%s answered the hello without a welcome and a lease", addr)
	}
	s := w.newSession(ctx, cancel, stream, welcome.GetLease().AsDuration())
	s.takesProgress = welcome.GetProgress()
	w.log.info("connected to the leader", "addr", addr, "lease", s.lease)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.sendLoop() }()
	go func() { defer wg.Done(); s.watchLease() }()
	s.receive()
	<-ctx.Done()
	wg.Wait()
	s.stopAll(context.Cause(ctx))
	return context.Cause(ctx)
}

// newSession is a session on stream, which ends with ctx.
func (w *Worker) newSession(ctx context.Context, cancel context.CancelCauseFunc, stream pb.WorkerService_ConnectClient, lease time.Duration) *session {
	s := &session{
		w: w, stream: stream, ctx: ctx, base: context.WithoutCancel(ctx), cancel: cancel,
		lease:    lease,
		running:  make(map[uint64]*attempt),
		progress: make(map[uint64]*pb.AttemptProgress),
		signal:   make(chan struct{}, 1),
	}
	s.heard.Store(time.Now().UnixNano())
	return s
}

// recvErr is the status the server ended the stream with, when a send
// fails because it did.
func recvErr(stream pb.WorkerService_ConnectClient, sendErr error) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	return sendErr
}

// receive handles the leader's messages until the stream ends.
func (s *session) receive() {
	for {
		m, err := s.stream.Recv()
		if err != nil {
			s.cancel(err)
			return
		}
		s.heard.Store(time.Now().UnixNano())
		switch msg := m.GetMsg().(type) {
		case *pb.ConnectResponse_Offers:
			s.take(msg.Offers.GetAttempts())
		case *pb.ConnectResponse_Cancels:
			s.stop(msg.Cancels.GetTokens(), msg.Cancels.GetReason())
		case *pb.ConnectResponse_Heartbeat:
		default:
			s.cancel(fmt.Errorf("the leader sent an unexpected %T", msg))
			return
		}
	}
}

// take acknowledges offered attempts and starts each. Only the bookkeeping
// happens under the lock: attempts that end meanwhile wait for it to
// report, and a burst's thousand would all queue behind the starts.
func (s *session) take(offers []*pb.WorkerAttempt) {
	fresh := make([]*attempt, len(offers))
	for i, a := range offers {
		fresh[i] = s.newAttempt(a)
	}
	s.mu.Lock()
	started := 0
	for _, at := range fresh {
		token := at.a.GetToken()
		s.acks = append(s.acks, token)
		if _, dup := s.running[token]; dup {
			continue
		}
		s.running[token] = at
		fresh[started] = at
		started++
	}
	s.mu.Unlock()
	s.notify()
	for _, at := range fresh[:started] {
		at.start()
	}
	if started > 0 {
		s.w.log.debug("attempts offered", "count", started)
	}
}

// finished queues an attempt's outcome, unless the attempt was cut short
// by the end of the session: the leader has given it up, and only an
// attempt that ended on its own has an outcome worth reporting.
func (s *session) finished(at *attempt, o *pb.WorkerOutcome) {
	a := at.a
	s.mu.Lock()
	delete(s.running, a.GetToken())
	delete(s.progress, a.GetToken())
	s.mu.Unlock()
	at.cancel(nil)
	if o.GetState() == pb.RunState_RUN_STATE_CANCELLED && s.ctx.Err() != nil {
		s.w.log.givenUp(a)
		return
	}
	s.w.log.logAttempt(a, o)
	s.w.out.add(o)
}

// stopAll cancels what still runs when the session has ended (its
// attempts' contexts are not children of the session's: see start).
func (s *session) stopAll(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range s.running {
		at.cancel(cause)
	}
}

// stop cancels attempts at the leader's request; each reports CANCELLED.
func (s *session) stop(tokens []uint64, reason string) {
	s.mu.Lock()
	var stop []*attempt
	for _, t := range tokens {
		if at := s.running[t]; at != nil {
			stop = append(stop, at)
		}
	}
	s.mu.Unlock()
	for _, at := range stop {
		at.interrupt(cancelledByLeader{reason})
	}
}

// cancelledByLeader is why an attempt's context ends when the leader
// cancels it.
type cancelledByLeader struct{ reason string }

func (c cancelledByLeader) Error() string {
	if c.reason == "" {
		return "cancelled by the leader"
	}
	return c.reason
}

func (s *session) notify() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// sendLoop sends acknowledgements, outcomes, heartbeats and progress
// until the session ends; a failed send ends it. Outcomes it could not
// send stay queued for the next session. Progress goes once a second at
// most, each attempt's latest report.
func (s *session) sendLoop() {
	beat := time.NewTicker(s.lease / 3)
	defer beat.Stop()
	progress := time.NewTicker(progressEvery)
	defer progress.Stop()
	for {
		var msgs []*pb.ConnectRequest
		select {
		case <-s.ctx.Done():
			return
		case <-beat.C:
			msgs = append(msgs, &pb.ConnectRequest{Msg: &pb.ConnectRequest_Heartbeat{Heartbeat: &pb.WorkerHeartbeat{}}})
		case <-progress.C:
			if p := s.takeProgress(); len(p) > 0 {
				msgs = append(msgs, &pb.ConnectRequest{Msg: &pb.ConnectRequest_Progress{Progress: &pb.WorkerProgress{Attempts: p}}})
			}
		case <-s.signal:
		case <-s.w.out.signal:
			// Attempts that are about to end join the message: in a burst,
			// one outcome per message would cost both ends a send each.
			runtime.Gosched()
		}
		if acks := s.takeAcks(); len(acks) > 0 {
			msgs = append(msgs, &pb.ConnectRequest{Msg: &pb.ConnectRequest_Acks{Acks: &pb.WorkerAcks{Tokens: acks}}})
		}
		outcomes := s.w.out.take(maxOutcomesPerMessage)
		if len(outcomes) > 0 {
			msgs = append(msgs, &pb.ConnectRequest{Msg: &pb.ConnectRequest_Outcomes{Outcomes: &pb.WorkerOutcomes{Outcomes: outcomes}}})
		}
		for _, m := range msgs {
			if err := s.stream.Send(m); err != nil {
				s.w.out.putBack(outcomes)
				s.cancel(err)
				return
			}
		}
		if s.w.out.len() > 0 {
			s.w.out.notify() // more than one message's worth
		}
	}
}

// progressEvery is how often the session sends progress: each attempt's
// latest report, at most one a second, so that a handler reporting in a
// tight loop costs the leader nothing more.
const progressEvery = time.Second

// report keeps the latest progress of a running attempt for the next
// progress message; nothing when the leader does not take progress.
func (s *session) report(at *attempt, p *pb.AttemptProgress) {
	if !s.takesProgress {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, running := s.running[at.a.GetToken()]; running {
		s.progress[at.a.GetToken()] = p
	}
}

func (s *session) takeProgress() []*pb.AttemptProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*pb.AttemptProgress, 0, len(s.progress))
	for t, p := range s.progress {
		out = append(out, p)
		delete(s.progress, t)
	}
	return out
}

func (s *session) takeAcks() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.acks
	s.acks = nil
	return a
}

// watchLease ends the session when the leader has been silent for a
// lease (a partition without a reset, a paused leader).
func (s *session) watchLease() {
	t := time.NewTicker(max(s.lease/10, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, s.heard.Load())) > s.lease {
				s.cancel(errLeaseLost)
				return
			}
		}
	}
}

// logger is the worker's slog with its attempt line.
type logger struct{ *slog.Logger }

func (l logger) info(msg string, args ...any)  { l.Info(msg, args...) }
func (l logger) warn(msg string, args ...any)  { l.Warn(msg, args...) }
func (l logger) debug(msg string, args ...any) { l.Debug(msg, args...) }

// givenUp logs an attempt cut short by the end of its session.
func (l logger) givenUp(a *pb.WorkerAttempt) {
	l.info("attempt given up with the lease", "job", a.GetJob(), "run_id", a.GetRunId(), "token", a.GetToken())
}

// logAttempt writes the one line per finished attempt, with the same
// fields as a node's; typed attributes, and nothing at all when the level
// is off, since it is the worker's hottest log call.
func (l logger) logAttempt(a *pb.WorkerAttempt, o *pb.WorkerOutcome) {
	if l.Enabled(context.Background(), slog.LevelInfo) {
		l.writeAttempt(a, o)
	}
}

// writeAttempt is logAttempt's line. Its frame is large; on its own, it
// does not grow the stack of an attempt that logs nothing.
func (l logger) writeAttempt(a *pb.WorkerAttempt, o *pb.WorkerOutcome) {
	l.LogAttrs(context.Background(), slog.LevelInfo, "run attempt finished",
		slog.String("job", a.GetJob()), slog.String("run_id", a.GetRunId()), slog.Uint64("token", a.GetToken()),
		slog.Uint64("attempt", uint64(a.GetAttempt())),
		slog.String("scheduled_at", time.Unix(a.GetSlotUnix(), 0).UTC().Format(time.RFC3339)),
		slog.String("outcome", strings.ToLower(strings.TrimPrefix(o.GetState().String(), "RUN_STATE_"))),
		slog.String("detail", o.GetDetail()))
}
