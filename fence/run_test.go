package fence

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

func sampleRun() Run {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	return Run{
		Token:          42,
		Job:            "nightly-billing",
		RunID:          "r-0001",
		IdempotencyKey: "nightly-billing/" + FormatScheduledAt(at),
		ScheduledAt:    at,
		Attempt:        2,
	}
}

func sampleHeader() http.Header {
	h := http.Header{}
	sampleRun().SetHeader(h)
	return h
}

func TestFromHeaderParsesWhatSetHeaderWrites(t *testing.T) {
	want := sampleRun()
	h := sampleHeader()
	if got := h.Get(HeaderFencingToken); got != "42" {
		t.Fatalf("%s = %q, want 42", HeaderFencingToken, got)
	}
	if got := h.Get(HeaderScheduledAt); got != "2026-11-22T01:02:03Z" {
		t.Fatalf("%s = %q, want 2026-11-22T01:02:03Z", HeaderScheduledAt, got)
	}
	if got := h.Get(HeaderIdempotencyKey); got != "nightly-billing/2026-11-22T01:02:03Z" {
		t.Fatalf("%s = %q", HeaderIdempotencyKey, got)
	}
	got, err := FromHeader(h)
	if err != nil {
		t.Fatalf("FromHeader: %v", err)
	}
	if got != want {
		t.Fatalf("FromHeader = %+v, want %+v", got, want)
	}
}

func TestFromEnvParsesWhatEnvironWrites(t *testing.T) {
	want := sampleRun()
	env := map[string]string{}
	for _, kv := range want.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	if len(env) != 6 || env[EnvFencingToken] != "42" || env[EnvAttempt] != "2" {
		t.Fatalf("Environ = %v", want.Environ())
	}
	got, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	if got != want {
		t.Fatalf("FromEnv = %+v, want %+v", got, want)
	}
}

func TestFromEnvironReadsProcessEnvironment(t *testing.T) {
	want := sampleRun()
	for _, kv := range want.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	got, err := FromEnviron()
	if err != nil || got != want {
		t.Fatalf("FromEnviron = %+v, %v; want %+v", got, err, want)
	}
}

func TestFromMetadataParsesWhatMetadataWrites(t *testing.T) {
	want := sampleRun()
	md := want.Metadata()
	if got := md.Get("x-raftcron-fencing-token"); len(got) != 1 || got[0] != "42" {
		t.Fatalf("metadata token = %v", got)
	}
	got, err := FromMetadata(md)
	if err != nil || got != want {
		t.Fatalf("FromMetadata = %+v, %v; want %+v", got, err, want)
	}
}

func TestFromHeaderAcceptsFractionalSeconds(t *testing.T) {
	h := sampleHeader()
	h.Set(HeaderScheduledAt, "2026-11-22T01:02:03.25Z")
	r, err := FromHeader(h)
	if err != nil {
		t.Fatalf("FromHeader: %v", err)
	}
	if r.ScheduledAt.Nanosecond() != 250_000_000 || FormatScheduledAt(r.ScheduledAt) != "2026-11-22T01:02:03.25Z" {
		t.Fatalf("ScheduledAt = %v", r.ScheduledAt)
	}
}

func TestFromHeaderRefusesBadInput(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(http.Header)
		want    error
		message string // exact error text when not empty
	}{
		{"token missing", func(h http.Header) { h.Del(HeaderFencingToken) }, ErrMissing,
			"X-Raftcron-Fencing-Token: missing"},
		{"token empty", func(h http.Header) { h.Set(HeaderFencingToken, "") }, ErrMissing,
			"X-Raftcron-Fencing-Token: missing"},
		{"token garbled", func(h http.Header) { h.Set(HeaderFencingToken, "abc") }, ErrMalformed,
			`X-Raftcron-Fencing-Token: not an unsigned integer ("abc")`},
		{"token negative", func(h http.Header) { h.Set(HeaderFencingToken, "-1") }, ErrMalformed, ""},
		{"token signed", func(h http.Header) { h.Set(HeaderFencingToken, "+7") }, ErrMalformed, ""},
		{"token fraction", func(h http.Header) { h.Set(HeaderFencingToken, "1.5") }, ErrMalformed, ""},
		{"token overflow", func(h http.Header) { h.Set(HeaderFencingToken, "18446744073709551616") }, ErrMalformed, ""},
		{"token zero", func(h http.Header) { h.Set(HeaderFencingToken, "0") }, ErrMalformed,
			"X-Raftcron-Fencing-Token: token 0 is never issued"},
		{"token twice", func(h http.Header) { h.Add(HeaderFencingToken, "43") }, ErrMalformed,
			"X-Raftcron-Fencing-Token: given 2 times, want once"},
		{"job missing", func(h http.Header) { h.Del(HeaderJob) }, ErrMissing, "X-Raftcron-Job: missing"},
		{"job upper case", func(h http.Header) { h.Set(HeaderJob, "Billing") }, ErrMalformed, ""},
		{"job leading dash", func(h http.Header) { h.Set(HeaderJob, "-billing") }, ErrMalformed, ""},
		{"job too long", func(h http.Header) { h.Set(HeaderJob, strings.Repeat("a", 64)) }, ErrMalformed, ""},
		{"run id missing", func(h http.Header) { h.Del(HeaderRunID) }, ErrMissing, "X-Raftcron-Run-Id: missing"},
		{"run id control", func(h http.Header) { h["X-Raftcron-Run-Id"] = []string{"a\x01b"} }, ErrMalformed, ""},
		{"key missing", func(h http.Header) { h.Del(HeaderIdempotencyKey) }, ErrMissing, "Idempotency-Key: missing"},
		{"key too long", func(h http.Header) { h.Set(HeaderIdempotencyKey, strings.Repeat("k", MaxFieldLen+1)) },
			ErrMalformed, "Idempotency-Key: longer than 256 bytes"},
		{"key not utf-8", func(h http.Header) { h.Set(HeaderIdempotencyKey, "k\xff") }, ErrMalformed, ""},
		{"scheduled missing", func(h http.Header) { h.Del(HeaderScheduledAt) }, ErrMissing, ""},
		{"scheduled garbled", func(h http.Header) { h.Set(HeaderScheduledAt, "yesterday") }, ErrMalformed, ""},
		{"scheduled not utc", func(h http.Header) { h.Set(HeaderScheduledAt, "2026-11-22T02:02:03+01:00") },
			ErrMalformed, `X-Raftcron-Scheduled-At: not in UTC (want a trailing Z, got "2026-11-22T02:02:03+01:00")`},
		{"attempt missing", func(h http.Header) { h.Del(HeaderAttempt) }, ErrMissing, ""},
		{"attempt zero", func(h http.Header) { h.Set(HeaderAttempt, "0") }, ErrMalformed,
			"X-Raftcron-Attempt: attempts are numbered from 1"},
		{"attempt overflow", func(h http.Header) { h.Set(HeaderAttempt, "4294967296") }, ErrMalformed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := sampleHeader()
			c.edit(h)
			r, err := FromHeader(h)
			if !errors.Is(err, c.want) {
				t.Fatalf("FromHeader = %+v, %v; want %v", r, err, c.want)
			}
			if r != (Run{}) {
				t.Fatalf("FromHeader returned a partial run %+v with its error", r)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), fe.Field+": ") {
				t.Fatalf("error %q does not name its field", err)
			}
			if c.message != "" && err.Error() != c.message {
				t.Fatalf("error = %q, want %q", err, c.message)
			}
		})
	}
}

func TestFromEnvNamesTheVariable(t *testing.T) {
	env := map[string]string{}
	for _, kv := range sampleRun().Environ() {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	env[EnvFencingToken] = "x"
	_, err := FromEnv(func(k string) string { return env[k] })
	if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "RAFTCRON_FENCING_TOKEN: ") {
		t.Fatalf("FromEnv error = %v, want a malformed RAFTCRON_FENCING_TOKEN", err)
	}
	delete(env, EnvJob)
	env[EnvFencingToken] = "5"
	_, err = FromEnv(func(k string) string { return env[k] })
	if err == nil || err.Error() != "RAFTCRON_JOB: missing" {
		t.Fatalf("FromEnv error = %v, want RAFTCRON_JOB: missing", err)
	}
}

func TestFromMetadataNamesTheKey(t *testing.T) {
	md := sampleRun().Metadata()
	md.Set("x-raftcron-fencing-token", "0")
	_, err := FromMetadata(md)
	if err == nil || err.Error() != "x-raftcron-fencing-token: token 0 is never issued" {
		t.Fatalf("FromMetadata error = %v", err)
	}
	_, err = FromMetadata(metadata.MD{})
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("FromMetadata(empty) error = %v, want ErrMissing", err)
	}
	_, err = FromMetadata(nil)
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("FromMetadata(nil) error = %v, want ErrMissing", err)
	}
}

// FuzzFromHeader: no input panics, and whatever parses survives a round trip unchanged.
func FuzzFromHeader(f *testing.F) {
	s := sampleHeader()
	f.Add(s.Get(HeaderFencingToken), s.Get(HeaderJob), s.Get(HeaderRunID), s.Get(HeaderIdempotencyKey),
		s.Get(HeaderScheduledAt), s.Get(HeaderAttempt))
	f.Add("042", "a", "r", "k", "2026-11-22T01:02:03.000Z", "1")
	f.Add("0", "", "", "", "", "")
	f.Add("18446744073709551615", "a.b_c-d", "\x00", "k\xff", "2026-11-22T01:02:03+00:00", "4294967295")
	f.Fuzz(func(t *testing.T, token, job, runID, key, at, attempt string) {
		h := http.Header{}
		for name, v := range map[string]string{HeaderFencingToken: token, HeaderJob: job, HeaderRunID: runID,
			HeaderIdempotencyKey: key, HeaderScheduledAt: at, HeaderAttempt: attempt} {
			h.Set(name, v)
		}
		r, err := FromHeader(h)
		if err != nil {
			if !errors.Is(err, ErrMissing) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is neither ErrMissing nor ErrMalformed", err)
			}
			return
		}
		if r.Token == 0 || r.Attempt == 0 {
			t.Fatalf("parsed a zero token or attempt: %+v", r)
		}
		h2 := http.Header{}
		r.SetHeader(h2)
		r2, err := FromHeader(h2)
		if err != nil || r2 != r {
			t.Fatalf("round trip of %+v = %+v, %v", r, r2, err)
		}
	})
}

// The node's HTTP executor stores these names in an http.Header map without
// Set, which is only right for names in canonical form.
func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range []string{HeaderFencingToken, HeaderJob, HeaderRunID,
		HeaderScheduledAt, HeaderAttempt, HeaderIdempotencyKey} {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("header %q is not in canonical form %q", name, c)
		}
	}
}
