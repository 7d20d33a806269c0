package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

// SinkMode says whether the sink protects its effects.
type SinkMode int

const (
	// SinkFenced admits a request only if its token is at least the
	// highest admitted for its job, and applies each run once (by
	// Idempotency-Key), atomically with the write: fence over bbolt, as
	// examples/ledger does.
	SinkFenced SinkMode = iota
	// SinkOpen applies every request: a downstream without fencing. Only
	// the negative control uses it.
	SinkOpen
)

// Sink is the downstream service of the scenarios: it applies what the
// cluster dispatches and records every request and what it decided.
// Safe for concurrent use.
type Sink struct {
	mode   SinkMode
	ledger *ledger.Ledger // nil in SinkOpen mode

	// mu orders decisions: the record is in the order requests were
	// decided, and seq numbers them. It guards every field below.
	mu       sync.Mutex
	attempts []Attempt
	senders  map[string]string        // remote IP -> node id
	delays   map[string]time.Duration // job -> how long to hold the reply
	changed  chan struct{}            // closed and replaced on every new attempt
}

// NewSink opens a sink whose fenced ledger lives at path (unused in
// SinkOpen mode).
func NewSink(path string, mode SinkMode) (*Sink, error) {
	s := &Sink{mode: mode, senders: map[string]string{}, delays: map[string]time.Duration{}, changed: make(chan struct{})}
	if mode == SinkFenced {
		l, err := ledger.Open(path, ledger.ScopeJob, fence.WithOpenTimeout(time.Second))
		if err != nil {
			return nil, fmt.Errorf("sink ledger: %w", err)
		}
		s.ledger = l
	}
	return s, nil
}

// Close closes the sink's ledger file.
func (s *Sink) Close() error {
	if s.ledger == nil {
		return nil
	}
	return s.ledger.Close()
}

// SetSender names the node whose requests come from ip.
func (s *Sink) SetSender(ip, node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.senders[ip] = node
}

// SetDelay makes the sink hold its reply to job's requests for d after
// deciding them: a slow downstream, so that a node failing right after a
// dispatch leaves the run's outcome unknown.
func (s *Sink) SetDelay(job string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays[job] = d
}

// Attempts returns a copy of the record so far.
func (s *Sink) Attempts() []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Attempt(nil), s.attempts...)
}

// Wait blocks until cond holds on the record or ctx ends; it reports
// whether cond held.
func (s *Sink) Wait(ctx context.Context, cond func([]Attempt) bool) bool {
	for {
		s.mu.Lock()
		ok := cond(s.attempts)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// ServeHTTP decides one request: 200 applied or duplicate, 409 stale,
// 400 malformed, 500 if the store failed.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	run, err := fence.FromHeader(r.Header)
	a := Attempt{Job: run.Job, RunID: run.RunID, Token: run.Token, Number: run.Attempt, Key: run.IdempotencyKey}
	if !run.ScheduledAt.IsZero() {
		a.Slot = run.ScheduledAt.Unix()
	}
	if err == nil && run.ScheduledAt.Nanosecond() != 0 {
		err = fmt.Errorf("%s %s is not a whole second", fence.HeaderScheduledAt, fence.FormatScheduledAt(run.ScheduledAt))
	}
	if err == nil && run.IdempotencyKey != runKey(run.Job, a.Slot, run.RunID, "") &&
		run.IdempotencyKey != runKey(run.Job, a.Slot, run.RunID, keyManual) &&
		run.IdempotencyKey != runKey(run.Job, a.Slot, run.RunID, keyChained) {
		err = fmt.Errorf("%s %q names neither the run's slot nor its id", fence.HeaderIdempotencyKey, run.IdempotencyKey)
	}
	if err == nil {
		a.Parents = r.Header.Get(fence.HeaderParentRuns)
		_, err = fence.ParseParentRuns(fence.HeaderParentRuns, a.Parents)
	}

	a, code, delay := s.decide(r, run, a, err)
	time.Sleep(delay)
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(code)
	fmt.Fprintf(w, "%s\n", a.Outcome)
}

// The words of the run keys that name a run by its id (docs/fencing.md).
const (
	keyManual  = "manual"
	keyChained = "chained"
)

// runKey is the Idempotency-Key of a run (docs/fencing.md): its slot's
// (word ""), or for a manual or chained run one of its own.
func runKey(job string, slot int64, runID, word string) string {
	if word != "" {
		return fence.RunKey(job, word, runID)
	}
	return fence.SlotKey(job, time.Unix(slot, 0))
}

// decide records the request and its outcome, in order.
func (s *Sink) decide(r *http.Request, run fence.Run, a Attempt, err error) (Attempt, int, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Seq = len(s.attempts) + 1
	a.Received = time.Now()
	if host, _, splitErr := net.SplitHostPort(r.RemoteAddr); splitErr == nil {
		a.Sender = s.senders[host]
	}
	code := http.StatusOK
	switch {
	case err != nil:
		a.Outcome, a.Detail, code = Bad, err.Error(), http.StatusBadRequest
	default:
		a.Outcome, a.Detail, code = s.apply(r.Context(), run, a.Received)
	}
	s.attempts = append(s.attempts, a)
	close(s.changed)
	s.changed = make(chan struct{})
	return a, code, s.delays[a.Job]
}

// apply makes the effect (or not) and says what happened. Called under mu.
func (s *Sink) apply(ctx context.Context, run fence.Run, at time.Time) (Outcome, string, int) {
	if s.mode == SinkOpen {
		return Applied, "", http.StatusOK
	}
	// The request's context would cancel the write if the node gave up
	// waiting; the decision is recorded either way, so make it whole.
	_, err := s.ledger.Append(context.WithoutCancel(ctx), run, nil, at)
	var stale *fence.StaleError
	switch {
	case err == nil:
		return Applied, "", http.StatusOK
	case errors.Is(err, fence.ErrDuplicate):
		return Duplicate, "", http.StatusOK
	case errors.As(err, &stale):
		return Stale, fmt.Sprintf("token %d admitted", stale.Highest), http.StatusConflict
	default:
		return Bad, "store: " + err.Error(), http.StatusInternalServerError
	}
}
