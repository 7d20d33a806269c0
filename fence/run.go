package fence

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/metadata"
)

// HTTP header names raftcron sets on every dispatched request (DESIGN §7).
// They are declared here once: the node's executors send them and
// downstream services read them. Each is in canonical form, so a sender may
// set it in an http.Header map directly.
const (
	HeaderFencingToken   = "X-Raftcron-Fencing-Token"
	HeaderJob            = "X-Raftcron-Job"
	HeaderRunID          = "X-Raftcron-Run-Id"
	HeaderScheduledAt    = "X-Raftcron-Scheduled-At"
	HeaderAttempt        = "X-Raftcron-Attempt"
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderSignature carries "v1=<signature>" when the nodes sign their dispatches
	// (see Keys).
	HeaderSignature = "X-Raftcron-Signature"
	// HeaderParentRuns names the parent runs of a run fired by its job's
	// dependencies (a chained run): "RUN_ID@TOKEN,..." (ParentRuns). Absent
	// for any other run.
	HeaderParentRuns = "X-Raftcron-Parent-Runs"
)

// Environment variables raftcron sets for every exec run (DESIGN §7),
// declared here once like the header names.
const (
	EnvFencingToken   = "RAFTCRON_FENCING_TOKEN"
	EnvJob            = "RAFTCRON_JOB"
	EnvRunID          = "RAFTCRON_RUN_ID"
	EnvScheduledAt    = "RAFTCRON_SCHEDULED_AT"
	EnvAttempt        = "RAFTCRON_ATTEMPT"
	EnvIdempotencyKey = "RAFTCRON_IDEMPOTENCY_KEY"
	// EnvSignature is HeaderSignature's value, for exec runs.
	EnvSignature = "RAFTCRON_SIGNATURE"
	// EnvParentRuns is HeaderParentRuns's value, for exec and worker runs.
	EnvParentRuns = "RAFTCRON_PARENT_RUNS"
)

// MaxFieldLen bounds the run ID and the idempotency key, so that a misbehaving sender
// cannot make a Dedupe store keys of arbitrary size.
const MaxFieldLen = 256

// Sentinels for a Run that cannot be parsed; the returned error is a *FieldError that
// names the header, variable or metadata key.
var (
	ErrMissing   = errors.New("missing")
	ErrMalformed = errors.New("malformed")
)

// FieldError says which field of a Run was missing or malformed and why.
// errors.Is(err, ErrMissing) or errors.Is(err, ErrMalformed) tells the two apart.
type FieldError struct {
	Field  string // as spelled by the transport: header name, variable or metadata key
	Reason string
	Err    error // ErrMissing or ErrMalformed
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }
func (e *FieldError) Unwrap() error { return e.Err }

// Run is the identity of one dispatched run attempt.
type Run struct {
	Token          uint64    // fencing token of this attempt, > 0
	Job            string    // job name
	RunID          string    // the run; the same for every attempt of it
	IdempotencyKey string    // the run's key (SlotKey or RunKey): the same for every attempt of the run, no other run's
	ScheduledAt    time.Time // nominal fire time, UTC
	Attempt        uint32    // 1-based
}

// fieldNames spells the six fields for one transport, in Run order.
type fieldNames struct {
	token, job, runID, key, scheduledAt, attempt string
}

var (
	headerNames = fieldNames{HeaderFencingToken, HeaderJob, HeaderRunID,
		HeaderIdempotencyKey, HeaderScheduledAt, HeaderAttempt}
	envNames = fieldNames{EnvFencingToken, EnvJob, EnvRunID,
		EnvIdempotencyKey, EnvScheduledAt, EnvAttempt}
	metadataNames = fieldNames{strings.ToLower(HeaderFencingToken), strings.ToLower(HeaderJob),
		strings.ToLower(HeaderRunID), strings.ToLower(HeaderIdempotencyKey),
		strings.ToLower(HeaderScheduledAt), strings.ToLower(HeaderAttempt)}
)

// FromHeader parses the run from the headers of a request raftcron sent. All six headers
// are required; a header given more than once is malformed (a proxy may have added one).
func FromHeader(h http.Header) (Run, error) {
	return parseRun(headerNames, func(name string) []string { return h.Values(name) })
}

// FromMetadata parses the run from incoming gRPC metadata; the keys are the lowercase
// header names.
func FromMetadata(md metadata.MD) (Run, error) {
	return parseRun(metadataNames, md.Get)
}

// FromEnv parses the run from the variables of an exec run; getenv is usually os.Getenv
// (nil means os.Getenv). An empty variable counts as missing.
func FromEnv(getenv func(string) string) (Run, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return parseRun(envNames, func(name string) []string {
		if v := getenv(name); v != "" {
			return []string{v}
		}
		return nil
	})
}

// FromEnviron parses the run from this process's environment.
func FromEnviron() (Run, error) { return FromEnv(os.Getenv) }

// SetHeader writes the run into h, replacing any earlier values.
func (r Run) SetHeader(h http.Header) {
	for _, kv := range r.pairs(headerNames) {
		h.Set(kv[0], kv[1])
	}
}

// Environ returns the run as NAME=value entries for an exec run's environment.
func (r Run) Environ() []string {
	pairs := r.pairs(envNames)
	env := make([]string, 0, len(pairs))
	for _, kv := range pairs {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

// Metadata returns the run as outgoing gRPC metadata.
func (r Run) Metadata() metadata.MD {
	md := metadata.MD{}
	for _, kv := range r.pairs(metadataNames) {
		md.Set(kv[0], kv[1])
	}
	return md
}

func (r Run) pairs(n fieldNames) [6][2]string {
	return [6][2]string{
		{n.token, strconv.FormatUint(r.Token, 10)},
		{n.job, r.Job},
		{n.runID, r.RunID},
		{n.key, r.IdempotencyKey},
		{n.scheduledAt, FormatScheduledAt(r.ScheduledAt)},
		{n.attempt, strconv.FormatUint(uint64(r.Attempt), 10)},
	}
}

// FormatScheduledAt spells a fire time the way raftcron sends it: RFC 3339 in UTC, with
// fractional seconds only when there are any.
func FormatScheduledAt(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// parseRun reports the first bad field, in the order of the Run struct.
func parseRun(n fieldNames, get func(string) []string) (Run, error) {
	var r Run
	var err error
	one := func(name string) (string, error) {
		vs := get(name)
		switch {
		case len(vs) == 0 || (len(vs) == 1 && vs[0] == ""):
			return "", &FieldError{name, "missing", ErrMissing}
		case len(vs) > 1:
			return "", malformed(name, "given %d times, want once", len(vs))
		}
		return vs[0], nil
	}
	s, err := one(n.token)
	if err != nil {
		return Run{}, err
	}
	if r.Token, err = parseToken(n.token, s); err != nil {
		return Run{}, err
	}
	if r.Job, err = one(n.job); err != nil {
		return Run{}, err
	}
	if err = checkJobName(n.job, r.Job); err != nil {
		return Run{}, err
	}
	if r.RunID, err = one(n.runID); err != nil {
		return Run{}, err
	}
	if err = checkText(n.runID, r.RunID); err != nil {
		return Run{}, err
	}
	if r.IdempotencyKey, err = one(n.key); err != nil {
		return Run{}, err
	}
	if err = checkText(n.key, r.IdempotencyKey); err != nil {
		return Run{}, err
	}
	if s, err = one(n.scheduledAt); err != nil {
		return Run{}, err
	}
	if r.ScheduledAt, err = parseScheduledAt(n.scheduledAt, s); err != nil {
		return Run{}, err
	}
	if s, err = one(n.attempt); err != nil {
		return Run{}, err
	}
	if r.Attempt, err = parseAttempt(n.attempt, s); err != nil {
		return Run{}, err
	}
	return r, nil
}

func malformed(field, format string, args ...any) error {
	return &FieldError{field, fmt.Sprintf(format, args...), ErrMalformed}
}

func parseToken(field, s string) (uint64, error) {
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, malformed(field, "not an unsigned integer (%q)", clip(s))
	}
	if t == 0 {
		return 0, malformed(field, "token 0 is never issued")
	}
	return t, nil
}

func parseAttempt(field, s string) (uint32, error) {
	a, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, malformed(field, "not an unsigned 32-bit integer (%q)", clip(s))
	}
	if a == 0 {
		return 0, malformed(field, "attempts are numbered from 1")
	}
	return uint32(a), nil
}

func parseScheduledAt(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, malformed(field, "not an RFC 3339 time (%q)", clip(s))
	}
	if !strings.HasSuffix(s, "Z") {
		return time.Time{}, malformed(field, "not in UTC (want a trailing Z, got %q)", clip(s))
	}
	return t.UTC(), nil
}

// checkJobName applies raftcron's job name rule, [a-z0-9][a-z0-9._-]{0,62}.
func checkJobName(field, s string) error {
	if len(s) > 63 {
		return malformed(field, "longer than 63 characters")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return malformed(field, "not a job name (%q): want [a-z0-9][a-z0-9._-]{0,62}", clip(s))
		}
	}
	return nil
}

// checkText admits 1..MaxFieldLen bytes of UTF-8 without control characters.
func checkText(field, s string) error {
	if len(s) > MaxFieldLen {
		return malformed(field, "longer than %d bytes", MaxFieldLen)
	}
	if !utf8.ValidString(s) {
		return malformed(field, "not valid UTF-8")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return malformed(field, "contains a control character")
		}
	}
	return nil
}

// clip keeps error messages short when the input is long.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
