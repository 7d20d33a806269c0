package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/raftcron/raftcron/fence"
)

// MaxBody bounds the body of a delivery; only its digest is kept.
const MaxBody = 1 << 20

// Server is the ledger's HTTP interface:
//
//	GET /           the decisions, newest first, as a plain-text table
//	GET /entries    the ledger entries as JSON (?job=NAME, ?after=SEQ)
//	GET /decisions  the decisions as JSON, newest first
//	GET /healthz    200 while the server runs
//
// A request with any other method, on any path, is a delivery from raftcron.
type Server struct {
	ledger    *Ledger
	decisions *Decisions
	mux       *http.ServeMux
	verifier  *fence.Verifier // nil: deliveries are not verified

	// outMu keeps the lines written to out whole when deliveries arrive together.
	outMu sync.Mutex
	out   io.Writer
}

// Option configures a Server.
type Option func(*Server)

// WithVerifier makes the server verify every delivery's X-Raftcron-Signature (v2 over
// the method, the URL it was sent to, the body and the run; v1 only if v says so) before
// the run's token reaches the fence: a delivery without a genuine signature is refused
// with 401 (403 when it is genuine but meant for another job or URL) and changes nothing.
func WithVerifier(v *fence.Verifier) Option {
	return func(s *Server) { s.verifier = v }
}

// NewServer serves l and prints one line per decision to out (nil: nowhere).
func NewServer(l *Ledger, out io.Writer, opts ...Option) *Server {
	if out == nil {
		out = io.Discard
	}
	s := &Server{ledger: l, decisions: NewDecisions(DefaultDecisions), out: out, mux: http.NewServeMux()}
	for _, opt := range opts {
		opt(s)
	}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /entries", s.entries)
	s.mux.HandleFunc("GET /decisions", s.listDecisions)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	s.mux.HandleFunc("/", s.receive)
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// receive applies one delivery and answers as fence.Middleware would: 400 for bad
// headers, 401 or 403 for a signature that does not verify (WithVerifier), 409 naming
// both tokens for a stale one, 200 {"status":"duplicate"} for a run applied before, and
// 200 {"status":"applied","seq":N} for a new entry.
func (s *Server) receive(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		writeJSON(w, http.StatusNotFound, map[string]any{
			"error": "no such page: GET /, /entries, /decisions or /healthz"})
		return
	}
	d := Decision{Time: time.Now().UTC()}
	run, err := fence.FromHeader(r.Header)
	if err != nil {
		s.refuse(w, d, http.StatusBadRequest, err.Error())
		return
	}
	d.Job, d.RunID, d.ScheduledAt = run.Job, run.RunID, run.ScheduledAt
	d.Token, d.Attempt = run.Token, run.Attempt
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, d, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: larger than %d bytes", MaxBody))
			return
		}
		s.refuse(w, d, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	if status, err := s.verify(r, run, body); err != nil {
		d.Outcome, d.Detail = OutcomeUnverified, err.Error()
		s.record(d)
		writeJSON(w, status, map[string]any{"error": err.Error()})
		return
	}

	e, err := s.ledger.Append(r.Context(), run, body, d.Time)
	var stale *fence.StaleError
	switch {
	case err == nil:
		d.Outcome, d.Seq = OutcomeApplied, e.Seq
		writeJSON(w, http.StatusOK, map[string]any{"status": "applied", "seq": e.Seq})
	case errors.Is(err, fence.ErrDuplicate):
		d.Outcome = OutcomeDuplicate
		writeJSON(w, http.StatusOK, map[string]any{"status": "duplicate"})
	case errors.As(err, &stale):
		d.Outcome, d.Detail = OutcomeStale, fmt.Sprintf("highest %d", stale.Highest)
		writeJSON(w, http.StatusConflict, map[string]any{
			"error": "stale fencing token", "token": stale.Token,
			"highest": stale.Highest, "scope": stale.Scope,
		})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		d.Outcome, d.Detail = OutcomeError, err.Error()
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
	default:
		d.Outcome, d.Detail = OutcomeError, err.Error()
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
	}
	s.record(d)
}

// verify checks the delivery's signature when the server verifies them, and returns the
// status that refuses it.
func (s *Server) verify(r *http.Request, run fence.Run, body []byte) (int, error) {
	if s.verifier == nil {
		return 0, nil
	}
	// More than one value joins into one that no key made.
	sig := strings.Join(r.Header.Values(fence.HeaderSignature), ",")
	err := s.verifier.Verify(fence.HTTPDispatch(run, r.Method, fence.ReceivedURL(r), body), sig)
	if errors.Is(err, fence.ErrNotAccepted) {
		return http.StatusForbidden, err
	}
	return http.StatusUnauthorized, err
}

func (s *Server) refuse(w http.ResponseWriter, d Decision, status int, msg string) {
	d.Outcome, d.Detail = OutcomeBad, msg
	s.record(d)
	writeJSON(w, status, map[string]any{"error": msg})
}

func (s *Server) record(d Decision) {
	s.decisions.Add(d)
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintln(s.out, d)
}

func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	list := s.decisions.List()
	fmt.Fprintf(w, "ledger: %d decisions, newest first (the last %d are kept)\n\n", len(list), DefaultDecisions)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tJOB\tSCHEDULED_AT\tTOKEN\tATTEMPT\tRUN_ID\tOUTCOME\tDETAIL")
	for _, d := range list {
		detail := d.Detail
		if d.Seq != 0 {
			detail = fmt.Sprintf("seq %d", d.Seq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Time.Format(timeFormat), orDash(d.Job),
			d.scheduledAt(), orDash(d.Token), orDash(d.Attempt), orDash(d.RunID), d.Outcome, detail)
	}
	tw.Flush()
}

func (s *Server) entries(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{
				"error": fmt.Sprintf("after: not an unsigned integer (%q)", v)})
			return
		}
		after = n
	}
	list, err := s.ledger.Entries(r.URL.Query().Get("job"), after)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) listDecisions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.decisions.List())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
