package fence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Middleware fences an HTTP handler that raftcron calls:
//
//   - with WithKeys, signature missing or not made with the keys for this method, URL
//     and body (v2; v1 only with WithV1Signatures): 401 {"error": "..."}; a genuine one
//     for a job or URL that WithJobs or WithURLPrefix leave out: 403 {"error": "..."};
//     nothing is recorded and the handler is not called;
//   - headers missing or malformed: 400 {"error": "..."}; nothing is recorded and the
//     handler is not called;
//   - token lower than the highest admitted for the scope: 409 {"error":"stale fencing
//     token","token":N,"highest":M,"scope":"..."}, handler not called (raftcron then marks
//     the attempt fenced and does not retry it);
//   - idempotency key already recorded: 200 {"status":"duplicate"}, handler not called;
//   - otherwise the handler runs with the Run in its context (RunFromContext), and the key
//     is recorded only if it answered 2xx.
//
// The scope is the job name unless WithScope says otherwise. See Fence.Do for what is and
// is not atomic here.
func Middleware(f *Fence, opts ...Option) func(http.Handler) http.Handler {
	o := newOptions(opts)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serveFenced(f, o, next, w, r)
		})
	}
}

// errNot2xx keeps Fence.Do from recording the key of a request the handler refused.
var errNot2xx = errors.New("handler answered with a non-2xx status")

func serveFenced(f *Fence, o options, next http.Handler, w http.ResponseWriter, r *http.Request) {
	signatures := r.Header.Values(HeaderSignature)
	if o.requiresSignature(signatures) {
		unauthorized(w, ErrUnsigned)
		return
	}
	run, err := FromHeader(r.Header)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	body, err := o.signedBody(w, r)
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, map[string]any{"error": err.Error()})
		return
	}
	if err := o.authenticate(HTTPDispatch(run, r.Method, o.requestURL(r), body), signatures); err != nil {
		refuse(w, err)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	called := false
	err = f.Do(r.Context(), run, o.scope(run), func(ctx context.Context) error {
		called = true
		next.ServeHTTP(sw, r.WithContext(ctx))
		if s := sw.code(); s < 200 || s > 299 {
			return errNot2xx
		}
		return nil
	})
	var stale *StaleError
	switch {
	case err == nil, errors.Is(err, errNot2xx):
	case errors.Is(err, ErrUnrecorded):
		o.logger.Error("fence: effect applied but its idempotency key was not recorded; "+
			"a re-delivery will apply it again", "job", run.Job, "token", run.Token,
			"idempotency_key", run.IdempotencyKey, "error", err)
	case called:
		// The handler owns the response once it ran.
	case errors.Is(err, ErrDuplicate):
		writeJSON(w, http.StatusOK, map[string]any{"status": "duplicate"})
	case errors.As(err, &stale):
		writeJSON(w, http.StatusConflict, map[string]any{
			"error": "stale fencing token", "token": stale.Token,
			"highest": stale.Highest, "scope": stale.Scope,
		})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
	default:
		o.logger.Error("fence: cannot check the run", "job", run.Job, "token", run.Token, "error", err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
	}
}

// unauthorized refuses a request whose signature WithKeys could not verify.
func unauthorized(w http.ResponseWriter, err error) {
	w.Header().Set("WWW-Authenticate", `Raftcron-Signature version="v2"`)
	writeJSON(w, http.StatusUnauthorized, map[string]any{"error": err.Error()})
}

// refuse answers a dispatch that authenticate refused: 403 for one not meant for this
// service, 401 otherwise.
func refuse(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNotAccepted) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": err.Error()})
		return
	}
	unauthorized(w, err)
}

// MaxSignedBodyLen bounds the body Middleware reads to check a v2 signature; raftcron
// sends at most 64 KiB.
const MaxSignedBodyLen = 1 << 20

// signedBody reads the whole body for its digest, when a signature is to be checked, and
// puts it back for the handler.
func (o options) signedBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if o.verifier.keys == nil || r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSignedBodyLen))
	if err != nil {
		return nil, fmt.Errorf("fence: reading the body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// statusWriter remembers the final status the handler sent.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until a final (non-1xx) status is sent
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
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

// code is the status the client saw; a handler that wrote nothing answered 200.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Flush keeps streaming handlers working through the wrapper.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
