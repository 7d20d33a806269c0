package remote

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Bounds of the HTTP protocol (docs/workers.md).
const (
	// DefaultPollWait is how long a poll that names no wait waits.
	DefaultPollWait = 30 * time.Second
	// MaxPollWait caps a poll's wait, so that proxies' idle timeouts
	// leave polls alone; the HTTP port lets a poll's answer take longer.
	MaxPollWait = time.Minute
	// MaxPollOffers caps the offers of one poll's answer.
	MaxPollOffers = maxOffersPerMessage
	// maxPollsPerWorker bounds the polls one worker ID keeps open.
	maxPollsPerWorker = 16
	// maxHTTPWorkers bounds the HTTP workers' sessions of one hub.
	maxHTTPWorkers = 10_000
)

// ReasonSuperseded is the ErrorInfo reason of a heartbeat or outcome of
// an attempt that is no longer current on the leader; its metadata's
// MetadataWhy says why, one of the Why values.
const (
	ReasonSuperseded = "SUPERSEDED"
	MetadataWhy      = "why"
	// WhyLeaseExpired: its lease ran out; the run was re-dispatched or
	// recorded unknown.
	WhyLeaseExpired = "lease_expired"
	// WhyCancelled: the run was cancelled; the attempt is the worker's
	// until it reports it.
	WhyCancelled = "cancelled"
	// WhyNotHeld: the leader does not hold it: finished, offered by an
	// earlier leader, or never offered.
	WhyNotHeld = "not_held"
)

// errorDomain is the ErrorInfo domain of the API (cluster.ErrorDomain).
const errorDomain = "raftcron.io"

// Superseded is the status of a heartbeat or outcome of an attempt no
// longer current: Aborted, which the JSON API answers 409.
func Superseded(why, msg string) error {
	st, err := status.New(codes.Aborted, msg).WithDetails(&errdetails.ErrorInfo{
		Reason: ReasonSuperseded, Domain: errorDomain, Metadata: map[string]string{MetadataWhy: why},
	})
	if err != nil {
		return status.Error(codes.Aborted, msg)
	}
	return st.Err()
}

// SupersededWhy is the why of an error superseded made, and whether err is
// one.
func SupersededWhy(err error) (string, bool) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == ReasonSuperseded {
			return info.GetMetadata()[MetadataWhy], true
		}
	}
	return "", false
}

// PollRequest is a checked poll (the API checks the fields' rules).
type PollRequest struct {
	ID, Pool string
	Tags     map[string]string
	Handlers []string
	// Max offers in the answer, 1 to MaxPollOffers.
	Max int
	// Wait for a first offer, 0 to MaxPollWait.
	Wait time.Duration
}

// poll is one open poll of an HTTP worker. Guarded by Hub.mu.
type poll struct {
	max    int
	offers []*attempt
	err    error
	// ready is closed at the first offer, or when the poll ends. The
	// poll takes its offers under the hub's lock, so it still takes more
	// until the pump pass that made the first is over.
	ready  chan struct{}
	woken  bool
	closed bool // taken or ended: no more offers
}

func (p *poll) room() int {
	if p.closed {
		return 0
	}
	return p.max - len(p.offers)
}

func (p *poll) wake() {
	if !p.woken {
		p.woken = true
		close(p.ready)
	}
}

// deliver gives at to c's oldest poll with room; the pump offers an HTTP
// worker only what its polls have room for. Called under Hub.mu.
func (c *conn) deliver(at *attempt) {
	for _, p := range c.polls {
		if p.room() > 0 {
			p.offers = append(p.offers, at)
			p.wake()
			return
		}
	}
}

// endPolls ends c's open polls with cause. Called under Hub.mu.
func (c *conn) endPolls(cause error) {
	for _, p := range c.polls {
		p.err, p.closed = cause, true
		p.wake()
	}
}

// Poll registers a poll of an HTTP worker and waits up to req.Wait, or
// until ctx ends, for offers of its pool; the caller has checked that
// this node leads, and grants what the caller's token allows. A poll that
// got offers answers at the end of the pump pass that made them, so that
// one answer carries every offer that was ready. If ctx ends first, its
// offers go back to the queue under their tokens: nobody saw them.
func (h *Hub) Poll(ctx context.Context, grant Grant, req PollRequest) ([]*pb.AttemptOffer, error) {
	if err := grant.admitsPoll(req); err != nil {
		return nil, err
	}
	p := &poll{max: req.Max, ready: make(chan struct{})}
	h.mu.Lock()
	c, err := h.session(grant, req)
	if err != nil {
		h.mu.Unlock()
		return nil, err
	}
	c.polls = append(c.polls, p)
	h.mu.Unlock()
	h.pump() // what waits now, for this poll too

	t := time.NewTimer(req.Wait)
	select {
	case <-p.ready:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	now := time.Now()
	h.mu.Lock()
	c.removePoll(p)
	c.lastPoll = now
	offers := p.offers
	var cancelled []*attempt
	if p.err == nil && ctx.Err() != nil && len(offers) > 0 {
		cancelled = h.takeBack(c, offers)
	}
	h.mu.Unlock()
	for _, at := range cancelled {
		at.stopWatch()
		at.done(at.a, notStarted(context.Cause(at.ctx)))
	}
	switch {
	case p.err != nil:
		return nil, p.err
	case ctx.Err() != nil:
		h.kick()
		return nil, context.Cause(ctx)
	}
	out := make([]*pb.AttemptOffer, len(offers))
	for i, at := range offers {
		out[i] = httpOffer(at, h.signer)
	}
	return out, nil
}

// admitsPoll refuses a poll its grant does not cover, as admits refuses a
// hello.
func (g Grant) admitsPoll(req PollRequest) error {
	return g.allows(req.Pool, req.Max, "pool", "max")
}

// session finds or starts the HTTP worker's session of req.ID and makes it
// say what the poll says. Called under mu.
func (h *Hub) session(grant Grant, req PollRequest) (*conn, error) {
	h.inMu.Lock()
	closed := h.closed
	h.inMu.Unlock()
	c := h.conns[req.ID]
	switch {
	case closed:
		return nil, errShuttingDown
	case c != nil && !c.http:
		return nil, status.Errorf(codes.AlreadyExists,
			"worker %s is connected over gRPC (worker IDs must be unique; the ID is free once its stream is gone)", req.ID)
	case c != nil && c.token != grant.Token:
		return nil, status.Errorf(codes.AlreadyExists,
			"worker %s is polled with another ACL token (worker IDs must be unique)", req.ID)
	case c != nil && len(c.polls) >= maxPollsPerWorker:
		return nil, status.Errorf(codes.ResourceExhausted,
			"worker %s has %d polls open, its limit: wait for one to answer", req.ID, maxPollsPerWorker)
	case c == nil && h.httpSessions() >= maxHTTPWorkers:
		return nil, status.Errorf(codes.ResourceExhausted,
			"this leader serves %d HTTP workers, its limit: reuse worker IDs", maxHTTPWorkers)
	case c == nil:
		c = &conn{id: req.ID, token: grant.Token, http: true, inflight: make(map[uint64]*attempt)}
		h.conns[c.id] = c
		h.kick() // a sleeping run checks nothing: it has a session to check now
		h.metrics.connected.WithLabelValues(req.Pool).Inc()
		h.log.Info("worker polling", "worker", c.id, "pool", req.Pool, "tags", req.Tags, "handlers", len(req.Handlers))
	case c.pool != req.Pool:
		h.metrics.connected.WithLabelValues(c.pool).Dec()
		h.metrics.connected.WithLabelValues(req.Pool).Inc()
	}
	c.pool, c.tags, c.concurrency = req.Pool, req.Tags, grant.MaxConcurrency
	c.handlers = make(map[string]bool, len(req.Handlers))
	for _, name := range req.Handlers {
		c.handlers[name] = true
	}
	return c, nil
}

func (h *Hub) httpSessions() int {
	n := 0
	for _, c := range h.conns {
		if c.http {
			n++
		}
	}
	return n
}

func (c *conn) removePoll(p *poll) {
	for i, q := range c.polls {
		if q == p {
			c.polls = append(c.polls[:i], c.polls[i+1:]...)
			break
		}
	}
	p.closed = true
}

// takeBack returns the offers of a poll that ended before its answer was
// written to the front of the queue, under their tokens: the worker never
// saw them. It returns those cancelled while they were offered, whose
// cancel found them offered and left them to their worker: they end
// here. Called under mu.
func (h *Hub) takeBack(c *conn, offers []*attempt) (cancelled []*attempt) {
	for i := len(offers) - 1; i >= 0; i-- {
		at := offers[i]
		if at.state != stateOffered || at.conn != c {
			continue
		}
		delete(c.inflight, at.a.Token)
		delete(h.held, at.a.Token)
		if at.cancelled {
			at.state = stateFinished
			cancelled = append(cancelled, at)
			continue
		}
		at.state, at.conn = statePending, nil
		pool := at.a.Worker.GetPool()
		h.pending[pool] = append([]*attempt{at}, h.pending[pool]...)
		h.watchExpiry(at)
	}
	return cancelled
}

// expireLeases releases the attempts of HTTP worker c whose lease ran out.
// Called under mu.
func (h *Hub) expireLeases(c *conn, now time.Time) []released {
	var rs []released
	for token, at := range c.inflight {
		if now.After(at.leaseUntil) {
			delete(c.inflight, token)
			rs = append(rs, h.release(c, at, errLeaseRanOut))
		}
	}
	return rs
}

// endIdleSession forgets HTTP worker c once it holds nothing, polls
// nothing and has not polled for a lease. Called under mu.
func (h *Hub) endIdleSession(c *conn, now time.Time) {
	if len(c.inflight) > 0 || len(c.polls) > 0 || now.Sub(c.lastPoll) <= h.lease {
		return
	}
	c.gone = true
	delete(h.conns, c.id)
	h.metrics.connected.WithLabelValues(c.pool).Dec()
	h.log.Debug("worker stopped polling", "worker", c.id, "pool", c.pool)
}

// errLeaseRanOut is why an HTTP worker loses an attempt.
var errLeaseRanOut = fmt.Errorf("no heartbeat of the attempt within its lease")

// Beat is a checked heartbeat.
type Beat struct {
	RunID    string
	Token    uint64
	Progress *uint32
	Message  *string
}

// Heartbeat extends the lease of an attempt an HTTP worker holds and
// records its progress; it answers the lease's new end and length, or
// SUPERSEDED when the attempt is no longer current.
func (h *Hub) Heartbeat(grant Grant, b Beat) (time.Time, time.Duration, error) {
	now := time.Now()
	h.mu.Lock()
	at, err := h.heldFor(grant, b.RunID, b.Token)
	if err == nil && at.cancelled {
		err = Superseded(WhyCancelled, fmt.Sprintf("run %s was cancelled (%v): stop attempt %d and report it",
			b.RunID, context.Cause(at.ctx), b.Token))
	}
	if err != nil {
		h.mu.Unlock()
		return time.Time{}, 0, err
	}
	lease := at.lease(h.lease)
	at.leaseUntil = now.Add(lease)
	rec := at.report(b.Progress, b.Message, now)
	h.mu.Unlock()
	if rec != nil {
		h.progress(rec)
	}
	return now.Add(lease), lease, nil
}

// heldFor finds the attempt an HTTP worker of grant holds, or why it
// holds none. Called under mu.
func (h *Hub) heldFor(grant Grant, runID string, token uint64) (*attempt, error) {
	at := h.held[token]
	if at == nil || at.a.RunID != runID {
		if l := h.lost[token]; l != nil && l.a.RunID == runID {
			return nil, Superseded(WhyLeaseExpired, fmt.Sprintf(
				"attempt %d of run %s was lost (its lease ran out): it has been re-dispatched under a larger token, or recorded unknown; stop it",
				token, runID))
		}
		return nil, Superseded(WhyNotHeld, fmt.Sprintf(
			"attempt %d of run %s is not held by the leader: it finished, was offered by an earlier leader, or was never offered; stop it",
			token, runID))
	}
	if at.conn.token != grant.Token {
		return nil, status.Errorf(codes.PermissionDenied,
			"attempt %d of run %s was offered to a worker of another ACL token", token, runID)
	}
	return at, nil
}

// Complete takes the outcome an HTTP worker reports of an attempt it
// holds; SUPERSEDED if it holds it no more. A late outcome of an attempt
// it lost (by the same token) is still handed on for the FSM to judge.
func (h *Hub) Complete(grant Grant, o *pb.WorkerOutcome) error {
	now := time.Now()
	h.mu.Lock()
	at, err := h.heldFor(grant, o.GetRunId(), o.GetToken())
	if err != nil {
		late := h.lateFor(grant, o)
		h.mu.Unlock()
		if late != nil && o.GetState() != pb.RunState_RUN_STATE_CANCELLED {
			late.stopWatch()
			late.done(late.a, outcome(late.lostBy, late, limitVerdict(late.a, o), now))
		}
		return err
	}
	c := at.conn
	delete(c.inflight, at.a.Token)
	delete(h.held, at.a.Token)
	at.state = stateFinished
	h.mu.Unlock()
	at.stopWatch()
	at.done(at.a, outcome(c.id, at, limitVerdict(at.a, o), now))
	h.kick() // room freed
	return nil
}

// lateFor takes the lost attempt that o reports, if a session of grant's
// token lost it. Called under mu.
func (h *Hub) lateFor(grant Grant, o *pb.WorkerOutcome) *attempt {
	at := h.lost[o.GetToken()]
	if at == nil || at.a.RunID != o.GetRunId() || at.lostToken != grant.Token {
		return nil
	}
	delete(h.lost, o.GetToken())
	at.state = stateFinished
	return at
}
