package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

// downstream is dev's demo service: the example ledger, fenced per job and
// de-duplicating, served in-process.
type downstream struct {
	ledger *ledger.Ledger
	srv    *http.Server
	addr   string
	served chan error // Serve's result
}

// startDownstream opens the ledger in dir and serves it on ln. Every
// delivery is printed as one attempt line naming the leader that sent it.
func startDownstream(dir string, ln net.Listener, leaders *leaderWatch, out *devOut, opts ...ledger.Option) (*downstream, error) {
	path := filepath.Join(dir, "ledger.db")
	l, err := ledger.Open(path, ledger.ScopeJob, fence.WithOpenTimeout(time.Second))
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("demo downstream: %w", err)
	}
	d := &downstream{
		ledger: l,
		addr:   ln.Addr().String(),
		served: make(chan error, 1),
		srv: &http.Server{
			Handler:           &attemptPrinter{next: ledger.NewServer(l, nil, opts...), leaderNow: leaders.leaderNow, out: out},
			ReadHeaderTimeout: 10 * time.Second,
		},
	}
	go func() { d.served <- d.srv.Serve(ln) }()
	return d, nil
}

func (d *downstream) url() string    { return "http://" + d.addr + "/" }
func (d *downstream) jobURL() string { return "http://" + d.addr + "/run" }

// downstreamStopTimeout bounds the wait for requests in flight at close.
const downstreamStopTimeout = 2 * time.Second

func (d *downstream) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), downstreamStopTimeout)
	defer cancel()
	if err := d.srv.Shutdown(ctx); err != nil {
		_ = d.srv.Close()
	}
	err := <-d.served
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, d.ledger.Close())
}

// attemptPrinter prints one line per delivery and what the ledger did with
// it: time, job, slot, token, attempt, the leader, outcome.
type attemptPrinter struct {
	next      http.Handler
	leaderNow func(context.Context) string
	out       *devOut
}

func (p *attemptPrinter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		p.next.ServeHTTP(w, r)
		return
	}
	node := p.leaderNow(r.Context())
	rec := &replyRecorder{ResponseWriter: w}
	p.next.ServeHTTP(rec, r)
	p.out.eventf("%s", attemptLine(r.Header, node, rec))
}

// attemptLine is the line of one delivery:
//
//	job=demo slot=2026-11-22T01:02:04Z token=7 attempt=1 node=n2 applied
func attemptLine(h http.Header, node string, rec *replyRecorder) string {
	run, err := fence.FromHeader(h)
	if err != nil {
		return fmt.Sprintf("delivery refused: %v (HTTP %d)", err, rec.code())
	}
	return fmt.Sprintf("job=%s slot=%s token=%d attempt=%d node=%s %s", run.Job,
		fence.FormatScheduledAt(run.ScheduledAt), run.Token, run.Attempt, node, rec.outcome())
}

// replyRecorder keeps the status and the start of the body the ledger
// answered, which say what it decided.
type replyRecorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

const maxRecordedReply = 4 << 10

func (r *replyRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *replyRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if room := maxRecordedReply - len(r.body); room > 0 {
		r.body = append(r.body, b[:min(room, len(b))]...)
	}
	return r.ResponseWriter.Write(b)
}

func (r *replyRecorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// outcome reads the ledger's answer: {"status":"applied"|"duplicate"} with
// 200, {"token","highest"} with 409 for a stale token, {"error"} otherwise.
func (r *replyRecorder) outcome() string {
	var reply struct {
		Status  string `json:"status"`
		Error   string `json:"error"`
		Token   uint64 `json:"token"`
		Highest uint64 `json:"highest"`
	}
	_ = json.Unmarshal(r.body, &reply)
	switch {
	case r.code() == http.StatusOK && reply.Status == string(ledger.OutcomeApplied):
		return string(ledger.OutcomeApplied)
	case r.code() == http.StatusOK && reply.Status == string(ledger.OutcomeDuplicate):
		return string(ledger.OutcomeDuplicate) + " (applied before: acknowledged, not written again)"
	case r.code() == http.StatusConflict:
		return fmt.Sprintf("%s (refused: a newer token %d was admitted)", ledger.OutcomeStale, reply.Highest)
	case r.code() == http.StatusUnauthorized || r.code() == http.StatusForbidden:
		return fmt.Sprintf("%s (refused, HTTP %d: %s)", ledger.OutcomeUnverified, r.code(), reply.Error)
	default:
		return fmt.Sprintf("%s (HTTP %d: %s)", ledger.OutcomeError, r.code(), reply.Error)
	}
}
