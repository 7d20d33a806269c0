package harness

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/raftcron/raftcron/fence"
)

// Delivery is one webhook request as the sink received it.
type Delivery struct {
	Job     string
	RunID   string
	Token   uint64
	Attempt int
	// Slot is the X-Raftcron-Scheduled-At time, whole Unix seconds.
	Slot int64
	// Recv is when the handler started, by this process's clock (the
	// nodes run on the same machine, so the same clock).
	Recv time.Time
}

// Lateness is the time from the slot's nominal time to the sink.
func (d Delivery) Lateness() time.Duration { return d.Recv.Sub(time.Unix(d.Slot, 0)) }

// Sink is a webhook receiver on loopback that records every delivery and
// answers 200 at once.
type Sink struct {
	ln  net.Listener
	srv *http.Server

	// mu guards deliveries, malformed, changed and watched. changed is
	// closed and replaced on the first append after a watcher took it, so
	// waiters wake without polling and a flood of requests nobody waits on
	// makes no channel per request.
	mu         sync.Mutex
	deliveries []Delivery
	malformed  int
	changed    chan struct{}
	watched    bool
}

// NewSink starts a sink on 127.0.0.1 with a free port.
func NewSink() (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{ln: ln, changed: make(chan struct{})}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the address jobs post to.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + "/hook" }

// Close stops the sink.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// ServeHTTP records one delivery.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	recv := time.Now()
	d, err := parseDelivery(r.Header, recv)
	s.mu.Lock()
	if err != nil {
		s.malformed++
	} else {
		s.deliveries = append(s.deliveries, d)
	}
	if s.watched {
		close(s.changed)
		s.changed = make(chan struct{})
		s.watched = false
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

var errMissingHeader = errors.New("missing raftcron header")

func parseDelivery(h http.Header, recv time.Time) (Delivery, error) {
	d := Delivery{Job: h.Get(fence.HeaderJob), RunID: h.Get(fence.HeaderRunID), Recv: recv}
	if d.Job == "" || d.RunID == "" {
		return d, errMissingHeader
	}
	tok, err := strconv.ParseUint(h.Get(fence.HeaderFencingToken), 10, 64)
	if err != nil {
		return d, err
	}
	d.Token = tok
	if d.Attempt, err = strconv.Atoi(h.Get(fence.HeaderAttempt)); err != nil {
		return d, err
	}
	at, err := time.Parse(time.RFC3339, h.Get(fence.HeaderScheduledAt))
	if err != nil {
		return d, err
	}
	d.Slot = at.Unix()
	return d, nil
}

// Len is the number of deliveries recorded.
func (s *Sink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.deliveries)
}

// Malformed is the number of requests without valid raftcron headers.
func (s *Sink) Malformed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.malformed
}

// Since returns a copy of the deliveries from index from on.
func (s *Sink) Since(from int) []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from >= len(s.deliveries) {
		return nil
	}
	return append([]Delivery(nil), s.deliveries[from:]...)
}

// Watch calls fn with each batch of deliveries recorded from index from
// on, oldest first, until fn returns true, deadline passes or ctx ends; it
// reports whether fn returned true. fn is called at least every 100 ms,
// with an empty batch if nothing arrived, and batches are coalesced over a
// few milliseconds so that a flood of deliveries costs little here.
func (s *Sink) Watch(ctx context.Context, deadline time.Time, from int, fn func(batch []Delivery) bool) bool {
	next := from
	for {
		s.mu.Lock()
		changed := s.changed
		s.watched = true
		s.mu.Unlock()
		batch := s.Since(next)
		next += len(batch)
		if fn(batch) {
			return true
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			time.Sleep(coalesce)
		case <-time.After(min(wait, 100*time.Millisecond)):
		}
	}
}

// coalesce is how long Watch lets deliveries gather after a wake-up.
const coalesce = 5 * time.Millisecond
