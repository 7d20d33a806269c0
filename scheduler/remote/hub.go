package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// DefaultLease is how long a worker may stay silent before its attempts
// are lost, unless Config.Lease says otherwise.
const DefaultLease = 10 * time.Second

// MinLease is the shortest lease: a worker heartbeats every third of it,
// which must stay well apart from the network's jitter.
const MinLease = 100 * time.Millisecond

// Bounds of the hub's work.
const (
	// maxOffersPerMessage caps one WorkerOffers message, so that one
	// message stays well below gRPC's 4 MiB default.
	maxOffersPerMessage = 1000
	// maxLostKept bounds the lost attempts remembered for their late
	// outcomes; the oldest are forgotten first.
	maxLostKept = 100_000
	// maxCheckInterval bounds the wait between lease, leadership and
	// no_worker checks.
	maxCheckInterval = 500 * time.Millisecond
)

// ErrClosed: the hub was closed (the node is stopping).
var ErrClosed = errors.New("worker service closed")

// Config wires a Hub.
type Config struct {
	// Lease: a worker silent for longer loses its attempts; 0 means
	// DefaultLease, otherwise at least MinLease.
	Lease time.Duration
	// Leading reports whether this node leads; the hub drops every worker
	// once it does not. Required.
	Leading func() bool
	// Signer, if set, signs every offer (WorkerAttempt.signature), as the
	// node signs its own dispatches: a worker passes the signature on and
	// the downstream verifies it.
	Signer *dispatch.Signer
	// Progress, if set, takes every change of an attempt's progress that
	// a worker reports, with the time the hub received it; the scheduler
	// commits them in batches. Called outside the hub's lock; it must not
	// block.
	Progress func(*pb.ProgressRecord)
	// Logger; nil discards.
	Logger *slog.Logger
}

// Hub is the leader's end of the worker streams: it takes committed
// attempts of jobs with a worker target from the scheduler (Submit),
// offers them in batches to connected workers of their pool with free
// capacity, watches the workers' leases and hands back what each attempt
// came to. It lives as long as the node and holds workers only while the
// node leads. See DESIGN.md.
type Hub struct {
	lease    time.Duration
	check    time.Duration
	leading  func() bool
	signer   *dispatch.Signer
	progress func(*pb.ProgressRecord)
	log      *slog.Logger
	metrics  *metrics

	wake chan struct{} // cap 1: the queues or the workers changed
	stop chan struct{}
	done chan struct{}
	// sleeps counts the times run found nothing to check (tests).
	sleeps atomic.Uint64

	// inMu guards inbox and closed. Submit takes only it, for an append:
	// the scheduler's loop submits a tick's thousands of attempts one by
	// one while the pump offers and outcomes come back under mu.
	inMu   sync.Mutex
	inbox  []*attempt // submitted, not yet queued by the pump
	closed bool

	// mu guards everything below, and the fields of every conn and
	// attempt that say so. Nothing blocking happens under it: sends go
	// through each conn's outbox, and done callbacks run after unlocking.
	mu    sync.Mutex
	conns map[string]*conn // by worker ID
	// pending holds the attempts not yet offered, by pool, oldest first;
	// finished ones are dropped lazily.
	pending map[string][]*attempt
	// nextExpiry is the earliest WaitUntil among pending attempts (zero:
	// none), so that a pump scans for no_worker only when one is due.
	nextExpiry time.Time
	// held are the attempts offered to HTTP workers, by token: their
	// heartbeats and outcomes name the attempt, not the worker.
	held map[uint64]*attempt
	// lost are offered attempts whose worker was lost, by token, for the
	// outcome that worker may still report; lostOrder bounds them.
	lost      map[uint64]*attempt
	lostOrder []uint64
	seq       uint64 // orders offers, for a fair spread
}

// New returns a running hub; Close stops it.
func New(cfg Config) (*Hub, error) {
	if cfg.Leading == nil {
		return nil, errors.New("remote: Config.Leading is required")
	}
	if cfg.Lease != 0 && cfg.Lease < MinLease {
		return nil, fmt.Errorf("remote: Config.Lease must be at least %s, got %s", MinLease, cfg.Lease)
	}
	h := &Hub{
		lease:    cfg.Lease,
		leading:  cfg.Leading,
		signer:   cfg.Signer,
		progress: cfg.Progress,
		log:      cfg.Logger,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		conns:    make(map[string]*conn),
		pending:  make(map[string][]*attempt),
		held:     make(map[uint64]*attempt),
		lost:     make(map[uint64]*attempt),
	}
	if h.lease == 0 {
		h.lease = DefaultLease
	}
	if h.progress == nil {
		h.progress = func(*pb.ProgressRecord) {}
	}
	h.check = min(h.lease/4, maxCheckInterval)
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h.metrics = newMetrics(h)
	go h.run()
	return h, nil
}

// Collectors are the hub's Prometheus metrics, for the node's registry.
func (h *Hub) Collectors() []prometheus.Collector { return h.metrics.collectors() }

// attemptState is where an attempt stands in the hub.
type attemptState int

const (
	statePending  attemptState = iota // waiting for a worker
	stateOffered                      // offered to conn, outcome awaited
	stateFinished                     // done was called
	stateLost                         // its worker was lost; a late outcome is still taken
)

// attempt is one committed attempt in the hub's hands.
type attempt struct {
	a    dispatch.Attempt
	ctx  context.Context
	done func(dispatch.Attempt, dispatch.Outcome)
	// stopWatch stops watching ctx.
	stopWatch func() bool
	submitted time.Time

	// Guarded by Hub.mu.
	state     attemptState
	conn      *conn     // the worker it was offered to
	offeredAt time.Time // the leader's clock: outcomes are stamped with it
	acked     bool
	cancelled bool // a cancel was sent to its worker
	// lostBy and lostToken are the worker ID and Grant.Token of the
	// session that lost it: the one session that may report it late.
	lostBy, lostToken string
	// leaseUntil is when an attempt offered to an HTTP worker is lost
	// unless a heartbeat extends it (by its lease); a stream's attempts
	// live with the stream.
	leaseUntil time.Time
	// The progress last reported, so that a report that changes nothing
	// goes no further.
	progress *uint32
	message  string
}

// lease is how long a heartbeat keeps the attempt: its target's
// worker.lease, or the hub's.
func (at *attempt) lease(hub time.Duration) time.Duration {
	if l := at.a.Worker.GetLease(); l != nil && l.AsDuration() > 0 {
		return l.AsDuration()
	}
	return hub
}

// Submit takes a committed attempt of a job with a worker target and
// returns at once; done reports what it came to (see scheduler.Remote).
// Cancelling ctx cancels it: a pending attempt ends CANCELLED at once, an
// offered one is cancelled on its worker, which reports it.
func (h *Hub) Submit(ctx context.Context, a dispatch.Attempt, done func(dispatch.Attempt, dispatch.Outcome)) error {
	if a.Worker == nil {
		return errors.New("remote: attempt without a worker target")
	}
	at := &attempt{a: a, ctx: ctx, done: done, submitted: time.Now()}
	// Watched before it can be offered: its outcome may come back before
	// Submit returns, and finds the attempt whole.
	at.stopWatch = context.AfterFunc(ctx, func() { h.cancel(at) })
	h.inMu.Lock()
	if h.closed {
		h.inMu.Unlock()
		if !at.stopWatch() {
			return nil // ctx had ended: cancel reports it
		}
		return ErrClosed
	}
	h.inbox = append(h.inbox, at)
	h.inMu.Unlock()
	h.kick()
	return nil
}

// queueSubmitted moves what was submitted since the last pump to the
// pools' queues. Called under mu.
func (h *Hub) queueSubmitted() {
	h.inMu.Lock()
	in := h.inbox
	h.inbox = nil
	h.inMu.Unlock()
	for _, at := range in {
		if at.state != statePending {
			continue // cancelled meanwhile
		}
		pool := at.a.Worker.GetPool()
		h.pending[pool] = append(h.pending[pool], at)
		h.watchExpiry(at)
	}
}

// watchExpiry makes sure the pump looks for no_worker by at's WaitUntil.
// Called under mu.
func (h *Hub) watchExpiry(at *attempt) {
	if w := at.a.WaitUntil; !w.IsZero() && (h.nextExpiry.IsZero() || w.Before(h.nextExpiry)) {
		h.nextExpiry = w
	}
}

func (h *Hub) kick() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close drops every worker and stops the hub; attempts it still holds end
// CANCELLED (the next leader re-dispatches them).
func (h *Hub) Close() {
	h.inMu.Lock()
	if h.closed {
		h.inMu.Unlock()
		return
	}
	h.closed = true
	h.inMu.Unlock()
	h.mu.Lock()
	h.queueSubmitted()
	conns := h.connList()
	var left []*attempt
	for _, q := range h.pending {
		for _, at := range q {
			if at.state == statePending {
				at.state = stateFinished
				left = append(left, at)
			}
		}
	}
	clear(h.pending)
	h.mu.Unlock()
	close(h.stop)
	<-h.done
	for _, c := range conns {
		h.drop(c, errShuttingDown)
	}
	for _, at := range left {
		at.stopWatch()
		at.done(at.a, notStarted(ErrClosed))
	}
}

// run pumps the queues whenever something changed, and checks leases,
// leadership and waiting attempts every check interval while it has
// anything to check. A hub with no worker and no attempt (every follower's,
// an idle leader's) sleeps until kicked: on an idle machine each wake-up of
// a process costs 0.1–0.2 ms of CPU.
func (h *Hub) run() {
	defer close(h.done)
	t := time.NewTicker(h.check)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.wake:
		case <-t.C:
			h.checkWorkers()
		}
		h.pump()
		if !h.empty() {
			continue
		}
		t.Stop()
		h.sleeps.Add(1)
		select {
		case <-h.stop:
			return
		case <-h.wake:
		}
		t.Reset(h.check)
		h.pump()
	}
}

// empty: no worker, and no attempt waiting or offered.
func (h *Hub) empty() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inMu.Lock()
	defer h.inMu.Unlock()
	return len(h.conns) == 0 && len(h.pending) == 0 && len(h.held) == 0 && len(h.inbox) == 0
}

// checkWorkers drops every worker when this node does not lead, and the
// streams that missed their lease; an HTTP worker loses each attempt that
// missed its own, and its session ends once it holds nothing and polls no
// more.
func (h *Hub) checkWorkers() {
	leading := h.leading()
	now := time.Now()
	h.mu.Lock()
	var drop []*conn
	var causes []error
	var expired []released
	for _, c := range h.conns {
		switch {
		case !leading:
			drop, causes = append(drop, c), append(causes, errNotLeading)
		case c.http:
			expired = append(expired, h.expireLeases(c, now)...)
			h.endIdleSession(c, now)
		case now.Sub(time.Unix(0, c.lastSeen.Load())) > h.lease:
			drop, causes = append(drop, c), append(causes, leaseError{lease: h.lease})
		case c.unackedSince(now, h.lease):
			drop, causes = append(drop, c), append(causes, errNoAck)
		}
	}
	h.mu.Unlock()
	h.finishReleased(expired)
	for i, c := range drop {
		h.drop(c, causes[i])
	}
}

// pump offers pending attempts to workers with free capacity and fails
// those that waited too long.
func (h *Hub) pump() {
	now := time.Now()
	h.mu.Lock()
	h.queueSubmitted()
	expiring := !h.nextExpiry.IsZero() && !now.Before(h.nextExpiry)
	if expiring {
		h.nextExpiry = time.Time{} // recomputed by the scan
	}
	var expired []*attempt
	touched := make(map[*conn]struct{})
	for pool, q := range h.pending {
		free := h.freeConns(pool)
		if len(free) == 0 && !expiring {
			continue
		}
		keep := q[:0]
		for i, at := range q {
			if at.state != statePending {
				continue
			}
			if expiring && !at.a.WaitUntil.IsZero() && now.After(at.a.WaitUntil) {
				at.state = stateFinished
				expired = append(expired, at)
				continue
			}
			if len(free) == 0 && !expiring {
				keep = append(keep, q[i:]...) // finished ones go at the next full scan
				break
			}
			if c := pick(free, at); c != nil {
				h.offer(c, at, now)
				touched[c] = struct{}{}
				if c.full() {
					free = removeConn(free, c)
				}
				continue
			}
			keep = append(keep, at)
			if expiring && !at.a.WaitUntil.IsZero() && (h.nextExpiry.IsZero() || at.a.WaitUntil.Before(h.nextExpiry)) {
				h.nextExpiry = at.a.WaitUntil
			}
		}
		clear(q[len(keep):])
		if len(keep) == 0 {
			delete(h.pending, pool)
		} else {
			h.pending[pool] = keep
		}
	}
	h.mu.Unlock()
	for c := range touched {
		if !c.http { // a poll was told under mu
			c.out.notify()
		}
	}
	for _, at := range expired {
		at.stopWatch()
		h.metrics.noWorker.Inc()
		at.done(at.a, noWorker(at, now))
	}
}

// freeConns lists the pool's workers with free capacity. Called under mu.
func (h *Hub) freeConns(pool string) []*conn {
	var out []*conn
	for _, c := range h.conns {
		if c.pool == pool && !c.full() {
			out = append(out, c)
		}
	}
	return out
}

// pick chooses the eligible worker with the lowest load, the one offered
// to least recently among equals: a fair spread over the pool.
func pick(free []*conn, at *attempt) *conn {
	var best *conn
	for _, c := range free {
		if !c.eligible(at.a) {
			continue
		}
		if best == nil || c.load() < best.load() || (c.load() == best.load() && c.lastOffer < best.lastOffer) {
			best = c
		}
	}
	return best
}

func removeConn(cs []*conn, c *conn) []*conn {
	for i, x := range cs {
		if x == c {
			return append(cs[:i], cs[i+1:]...)
		}
	}
	return cs
}

// offer hands at to c: to its stream's outbox, or to an HTTP worker's
// oldest poll with room, under a lease. Called under mu.
func (h *Hub) offer(c *conn, at *attempt, now time.Time) {
	h.seq++
	at.state, at.conn, at.offeredAt = stateOffered, c, now
	c.inflight[at.a.Token] = at
	c.lastOffer = h.seq
	if c.http {
		// No acknowledgement: the lease covers an answer that never
		// reached the worker.
		at.acked, at.leaseUntil = true, now.Add(at.lease(h.lease))
		h.held[at.a.Token] = at
		c.deliver(at)
	} else {
		c.unacked++
		c.out.addOffer(at)
	}
	h.metrics.offered.Inc()
	h.metrics.wait.Observe(now.Sub(at.submitted).Seconds())
}

// cancel runs when an attempt's context ends.
func (h *Hub) cancel(at *attempt) {
	h.mu.Lock()
	switch at.state {
	case statePending:
		at.state = stateFinished
		h.mu.Unlock()
		at.done(at.a, notStarted(context.Cause(at.ctx)))
	case stateOffered:
		c := at.conn
		first := !at.cancelled
		at.cancelled = true
		h.mu.Unlock()
		// An HTTP worker learns it at its next heartbeat (SUPERSEDED); the
		// attempt is its until it reports or its lease runs out.
		if first && !c.http {
			c.out.addCancel(at.a.Token, context.Cause(at.ctx).Error())
			c.out.notify()
		}
	default:
		h.mu.Unlock()
	}
}

// drop ends a worker's connection, or an HTTP worker's session and its
// polls: its attempts are lost (or, when their context was cancelled
// meanwhile, cancelled). Idempotent.
func (h *Hub) drop(c *conn, cause error) {
	h.mu.Lock()
	if c.gone {
		h.mu.Unlock()
		return
	}
	c.gone = true
	if h.conns[c.id] == c {
		delete(h.conns, c.id)
	}
	rs := make([]released, 0, len(c.inflight))
	for _, at := range c.inflight {
		rs = append(rs, h.release(c, at, cause))
	}
	c.inflight, c.unacked = nil, 0
	c.endPolls(cause)
	h.mu.Unlock()
	if !c.http {
		c.end(cause)
	}
	h.metrics.connected.WithLabelValues(c.pool).Dec()
	h.log.Info("worker disconnected", "worker", c.id, "pool", c.pool, "cause", cause.Error(),
		"attempts_lost", lostCount(rs))
	h.finishReleased(rs)
}

// released is an attempt taken from its worker, on its way to done.
type released struct {
	at *attempt
	o  dispatch.Outcome
}

// release takes at from c, whose worker lost it for cause: lost, to be
// reported late by that worker at most; or cancelled, if its context
// ended meanwhile. The caller deletes it from c.inflight. Called under mu.
func (h *Hub) release(c *conn, at *attempt, cause error) released {
	delete(h.held, at.a.Token)
	if at.ctx.Err() != nil {
		at.state = stateFinished
		return released{at, gone(at, c, cause)}
	}
	at.state, at.lostBy, at.lostToken = stateLost, c.id, c.token
	h.remember(at)
	return released{at, dispatch.Outcome{Lost: true, Detail: "worker " + c.id + ": " + cause.Error()}}
}

// finishReleased hands released attempts their outcome. Called outside mu.
func (h *Hub) finishReleased(rs []released) {
	for _, r := range rs {
		r.at.stopWatch()
		if r.o.Lost {
			h.metrics.lost.Inc()
		}
		r.at.done(r.at.a, r.o)
	}
}

func lostCount(rs []released) int {
	n := 0
	for _, r := range rs {
		if r.o.Lost {
			n++
		}
	}
	return n
}

// remember keeps a lost attempt for its late outcome. Called under mu.
func (h *Hub) remember(at *attempt) {
	if len(h.lostOrder) >= maxLostKept {
		delete(h.lost, h.lostOrder[0])
		h.lostOrder = h.lostOrder[1:]
	}
	h.lost[at.a.Token] = at
	h.lostOrder = append(h.lostOrder, at.a.Token)
}

// connList lists the connected workers. Called under mu.
func (h *Hub) connList() []*conn {
	out := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		out = append(out, c)
	}
	return out
}

// Unacked counts the attempts on their way to a worker: submitted and not
// yet offered, or offered and not yet acknowledged by the worker. Those
// waiting for a worker with free capacity are not: none may come.
func (h *Hub) Unacked() int {
	h.inMu.Lock()
	n := len(h.inbox)
	h.inMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		n += c.unacked
	}
	return n
}

// waiting counts the attempts no worker has taken yet.
func (h *Hub) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queueSubmitted()
	n := 0
	for _, q := range h.pending {
		for _, at := range q {
			if at.state == statePending {
				n++
			}
		}
	}
	return n
}
