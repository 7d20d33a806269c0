package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
)

// outcome is what the sink did with one delivery.
type outcome string

const (
	applied   outcome = "applied"   // admitted by the fence, effect applied
	duplicate outcome = "duplicate" // admitted, key already recorded: acknowledged, no effect
	stale     outcome = "stale"     // refused by the fence (409): a higher token was admitted
	refused   outcome = "refused"   // anything else (malformed headers, handler error)
)

// delivery is one request the sink received, whatever became of it.
type delivery struct {
	Job      string
	RunID    string
	Slot     int64 // X-Raftcron-Scheduled-At as Unix seconds
	Token    uint64
	Attempt  uint32
	Received time.Time
	Outcome  outcome
	Status   int
}

// sink is the downstream service: fence.Middleware over a per-job
// MemoryGuard and a MemoryDedupe keyed by Idempotency-Key, in front of an
// effect that only notes it ran. It records every request it gets.
type sink struct {
	srv     *httptest.Server
	handler http.Handler

	// mu guards log.
	mu  sync.Mutex
	log []delivery
}

type appliedKey struct{}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{}
	effect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ran, ok := r.Context().Value(appliedKey{}).(*bool); ok {
			*ran = true
		}
		w.WriteHeader(http.StatusOK)
	})
	s.handler = fence.Middleware(fence.NewFence(fence.NewMemoryGuard(), fence.NewMemoryDedupe(0)))(effect)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) url(path string) string { return s.srv.URL + path }

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	d := delivery{Received: time.Now(), Outcome: refused}
	if run, err := fence.FromHeader(r.Header); err == nil {
		d.Job, d.RunID, d.Slot = run.Job, run.RunID, run.ScheduledAt.Unix()
		d.Token, d.Attempt = run.Token, run.Attempt
	}
	ran := false
	sw := &statusWriter{ResponseWriter: w}
	s.handler.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), appliedKey{}, &ran)))
	d.Status = sw.status
	switch {
	case ran && sw.status == http.StatusOK:
		d.Outcome = applied
	case sw.status == http.StatusOK:
		d.Outcome = duplicate
	case sw.status == http.StatusConflict:
		d.Outcome = stale
	}
	s.mu.Lock()
	s.log = append(s.log, d)
	s.mu.Unlock()
}

// deliveries returns a copy of the history so far, in the order the sink
// finished handling the requests.
func (s *sink) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.log...)
}

// lastApplied is the newest slot of job applied so far and its token, or
// zeros.
func (s *sink) lastApplied(job string) (slot int64, token uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.log {
		if d.Job == job && d.Outcome == applied && d.Slot > slot {
			slot, token = d.Slot, d.Token
		}
	}
	return slot, token
}

// find returns the deliveries of job carrying token.
func (s *sink) find(job string, token uint64) []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []delivery
	for _, d := range s.log {
		if d.Job == job && d.Token == token {
			out = append(out, d)
		}
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func TestSinkClassifiesDeliveries(t *testing.T) {
	s := newSink(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	send := func(token uint64, attempt uint32) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.url("/tick"), nil)
		if err != nil {
			t.Fatal(err)
		}
		fence.Run{Token: token, Job: "tick", RunID: "tick-5", IdempotencyKey: "tick/" + at.Format(time.RFC3339),
			ScheduledAt: at, Attempt: attempt}.SetHeader(req.Header)
		resp, err := s.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	codes := []int{send(5, 1), send(7, 2), send(6, 1)}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 409 {
		t.Fatalf("status codes %v, want [200 200 409]", codes)
	}
	want := []outcome{applied, duplicate, stale}
	got := s.deliveries()
	if len(got) != len(want) {
		t.Fatalf("recorded %d deliveries, want %d", len(got), len(want))
	}
	for i, d := range got {
		if d.Outcome != want[i] || d.Slot != at.Unix() || d.RunID != "tick-5" {
			t.Errorf("delivery %d = %+v, want outcome %s for slot %d", i, d, want[i], at.Unix())
		}
	}
	if slot, token := s.lastApplied("tick"); slot != at.Unix() || token != 5 {
		t.Errorf("lastApplied = %d, %d; want %d, 5", slot, token, at.Unix())
	}
}
