package fence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// The conformance vectors every verification kit checks: Go writes them, the kits under
// clients/ and fence/sqlfence read them (docs/fencing.md, "Conformance vectors").
var updateVectors = flag.Bool("update", false, "rewrite "+VectorsPath)

// VectorsPath is where the vectors live, relative to this package.
const VectorsPath = "testdata/vectors.json"

type vectorFile struct {
	About      string            `json:"about"`
	Keys       map[string]string `json:"keys"`
	Signatures []sigVector       `json:"signatures"`
	Fence      []fenceVector     `json:"fence"`
}

// sigVector is one request as a service receives it and what a verifier must say of it.
type sigVector struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // "http", or "exec" for an exec run or worker attempt
	Method    string `json:"method,omitempty"`
	URL       string `json:"url,omitempty"`
	Body      string `json:"body"` // the request body, or the exec run's payload
	// Fields are the run's headers (http) or variables (exec), as received.
	Fields    map[string]string `json:"fields"`
	Signature string            `json:"signature"` // X-Raftcron-Signature or RAFTCRON_SIGNATURE
	Verifier  verifierVector    `json:"verifier"`
	// The canonical messages of the run as received, when its fields parse.
	CanonicalV1 string `json:"canonical_v1,omitempty"`
	CanonicalV2 string `json:"canonical_v2,omitempty"`
	// Verdict: ok, unsigned, bad_signature, not_accepted or malformed.
	Verdict string `json:"verdict"`
}

type verifierVector struct {
	Keys      []string `json:"keys"` // names in vectorFile.Keys
	AcceptV1  bool     `json:"accept_v1"`
	Jobs      []string `json:"jobs"`
	URLPrefix string   `json:"url_prefix"`
}

// fenceVector is a sequence of deliveries to one store, each with the outcome the SQL
// fence (and BoltFence.Update) must give: applied, stale or duplicate. Applied lists the
// keys whose effect exists afterwards, each exactly once.
type fenceVector struct {
	Name    string      `json:"name"`
	Steps   []fenceStep `json:"steps"`
	Applied []string    `json:"applied"`
}

type fenceStep struct {
	Scope string `json:"scope"`
	Token uint64 `json:"token"`
	Key   string `json:"key"`
	Want  string `json:"want"`
}

var vectorKeys = map[string]string{
	"old":    oldKey,
	"new":    newKey,
	"forger": "f0rger-f0rger-f0rger-f0rger-f0rger-f0rger",
}

// sigCase builds one signature vector: a run sent by a node holding signer (changed by
// send before it is signed), perhaps altered on its way (alter), received by a service
// configured as verifier.
type sigCase struct {
	name     string
	exec     bool
	version  int // 1 or 2; 0: unsigned
	signer   string
	send     func(*sigVector)
	alter    func(*sigVector)
	verifier verifierVector
	want     string
}

const (
	vecURL  = "https://billing.example/hooks/charge?invoice=7"
	vecBody = `{"amount":"12.50","currency":"EUR"}`
)

var (
	bothKeys = verifierVector{Keys: []string{"new", "old"}}
	newOnly  = verifierVector{Keys: []string{"new"}}
)

func sigCases() []sigCase {
	setField := func(name, value string) func(*sigVector) {
		return func(v *sigVector) { v.Fields[name] = value }
	}
	return []sigCase{
		{name: "v2 genuine", version: 2, signer: "new", verifier: bothKeys, want: "ok"},
		{name: "v2 rotated key: signed with the key being retired", version: 2, signer: "old", verifier: bothKeys, want: "ok"},
		{name: "v2 rotation over: the retired key no longer verifies", version: 2, signer: "old", verifier: newOnly, want: "bad_signature"},
		{name: "v2 wrong key", version: 2, signer: "forger", verifier: bothKeys, want: "bad_signature"},
		{name: "v2 forged token", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: setField(HeaderFencingToken, "4611686018427387904")},
		{name: "v2 body changed", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.Body = `{"amount":"99999","currency":"EUR"}` }},
		{name: "v2 method changed", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.Method = "PUT" }},
		{name: "v2 replayed to another URL", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.URL = "https://billing.example/hooks/refund?invoice=7" }},
		{name: "v2 replayed to another job", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) {
				v.Fields[HeaderJob] = "payroll"
				v.Fields[HeaderIdempotencyKey] = "payroll/2026-11-22T01:02:03Z"
			}},
		{name: "v2 another run id", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: setField(HeaderRunID, "r-0002")},
		{name: "v2 another slot", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: setField(HeaderScheduledAt, "2026-11-22T01:02:04Z")},
		{name: "v2 another attempt", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: setField(HeaderAttempt, "3")},
		{name: "v2 another idempotency key", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: setField(HeaderIdempotencyKey, "nightly-billing/manual/r-0001")},
		{name: "v2 genuine, job not accepted here", version: 2, signer: "new", want: "not_accepted",
			verifier: verifierVector{Keys: []string{"new"}, Jobs: []string{"payroll", "reports"}}},
		{name: "v2 genuine, job accepted here", version: 2, signer: "new", want: "ok",
			verifier: verifierVector{Keys: []string{"new"}, Jobs: []string{"payroll", "nightly-billing"}}},
		{name: "v2 genuine, URL not under the prefix", version: 2, signer: "new", want: "not_accepted",
			verifier: verifierVector{Keys: []string{"new"}, URLPrefix: "https://billing.example/internal/"}},
		{name: "v2 genuine, URL under the prefix", version: 2, signer: "new", want: "ok",
			verifier: verifierVector{Keys: []string{"new"}, URLPrefix: "https://billing.example/hooks/"}},
		{name: "v2 GET without a body", version: 2, signer: "new", verifier: bothKeys, want: "ok",
			send: func(v *sigVector) { v.Method, v.URL, v.Body = "GET", "http://127.0.0.1:8080/sync", "" }},
		{name: "v2 manual run key", version: 2, signer: "new", verifier: bothKeys, want: "ok",
			send: func(v *sigVector) { v.Fields[HeaderIdempotencyKey] = "nightly-billing/manual/r-0001" }},
		{name: "v2 fractional slot, canonical without trailing zeros", version: 2, signer: "new", verifier: bothKeys, want: "ok",
			send: func(v *sigVector) {
				v.Fields[HeaderScheduledAt] = "2026-11-22T01:02:03.500Z"
				v.Fields[HeaderIdempotencyKey] = "nightly-billing/2026-11-22T01:02:03.5Z"
			}},
		{name: "v2 uppercase prefix", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.Signature = "V2=" + v.Signature[3:] }},
		{name: "v2 padded base64", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.Signature += "=" }},
		{name: "v2 truncated", version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.Signature = v.Signature[:20] }},
		{name: "v1 refused by a v2-only verifier", version: 1, signer: "new", verifier: bothKeys, want: "bad_signature"},
		{name: "v1 accepted during the upgrade", version: 1, signer: "new", want: "ok",
			verifier: verifierVector{Keys: []string{"new", "old"}, AcceptV1: true}},
		{name: "v1 forged token during the upgrade", version: 1, signer: "new", want: "bad_signature",
			verifier: verifierVector{Keys: []string{"new", "old"}, AcceptV1: true},
			alter:    setField(HeaderFencingToken, "4611686018427387904")},
		{name: "v1 manual run key during the upgrade", version: 1, signer: "new", want: "ok",
			verifier: verifierVector{Keys: []string{"new", "old"}, AcceptV1: true},
			send:     setField(HeaderIdempotencyKey, "nightly-billing/manual/r-0001")},
		{name: "v1 manual run key of another run", version: 1, signer: "new", want: "bad_signature",
			verifier: verifierVector{Keys: []string{"new", "old"}, AcceptV1: true},
			send:     setField(HeaderIdempotencyKey, "nightly-billing/manual/r-0002")},
		{name: "v1 run key of a kind after manual", version: 1, signer: "new", want: "bad_signature",
			verifier: verifierVector{Keys: []string{"new", "old"}, AcceptV1: true},
			send:     setField(HeaderIdempotencyKey, "nightly-billing/chained/r-0001")},
		{name: "unsigned", verifier: bothKeys, want: "unsigned"},
		{name: "malformed token header", version: 2, signer: "new", verifier: bothKeys, want: "malformed",
			alter: setField(HeaderFencingToken, "0")},
		{name: "exec v2 genuine", exec: true, version: 2, signer: "new", verifier: bothKeys, want: "ok"},
		{name: "exec v2 payload changed", exec: true, version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) { v.Body = "another payload" }},
		{name: "exec v2 signature presented over HTTP", exec: true, version: 2, signer: "new", verifier: bothKeys, want: "bad_signature",
			alter: func(v *sigVector) {
				v.Transport, v.Method, v.URL = "http", "POST", vecURL
				v.Fields = map[string]string{}
				sampleRun().setFlat(v.Fields, false)
			}},
	}
}

// setFlat writes the run into fields under the header (or, for exec, variable) names.
func (r Run) setFlat(fields map[string]string, exec bool) {
	names := headerNames
	if exec {
		names = envNames
	}
	for _, kv := range r.pairs(names) {
		fields[kv[0]] = kv[1]
	}
}

func buildVector(t *testing.T, c sigCase) sigVector {
	t.Helper()
	run := sampleRun()
	v := sigVector{Name: c.name, Transport: "http", Method: "POST", URL: vecURL, Body: vecBody,
		Fields: map[string]string{}, Verifier: c.verifier}
	if v.Verifier.Jobs == nil {
		v.Verifier.Jobs = []string{}
	}
	if c.exec {
		v.Transport, v.Method, v.URL, v.Body = "exec", "", "", ""
	}
	run.setFlat(v.Fields, c.exec)
	if c.send != nil {
		c.send(&v)
	}
	if c.version != 0 {
		keys := mustKeys(t, vectorKeys[c.signer])
		sent, err := parseVectorRun(v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.version == 1 {
			v.Signature = keys.Sign(sent)
		} else if v.Signature, err = keys.SignV2(vectorDispatch(v, sent)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if c.alter != nil {
		c.alter(&v)
	}
	if run, err := parseVectorRun(v); err == nil {
		v.CanonicalV1 = string(signedMessage(run))
		v.CanonicalV2 = string(CanonicalV2(vectorDispatch(v, run)))
	}
	v.Verdict = verifyVector(t, v)
	return v
}

func parseVectorRun(v sigVector) (Run, error) {
	if v.Transport == "exec" {
		return FromEnv(func(name string) string { return v.Fields[name] })
	}
	h := http.Header{}
	for k, val := range v.Fields {
		h.Set(k, val)
	}
	return FromHeader(h)
}

func vectorDispatch(v sigVector, run Run) Dispatch {
	if v.Transport == "exec" {
		return ExecDispatch(run, []byte(v.Body))
	}
	return HTTPDispatch(run, v.Method, v.URL, []byte(v.Body))
}

// verifyVector is what Go's Verifier says of v.
func verifyVector(t *testing.T, v sigVector) string {
	t.Helper()
	run, err := parseVectorRun(v)
	if err != nil {
		return "malformed"
	}
	var lines []string
	for _, name := range v.Verifier.Keys {
		lines = append(lines, vectorKeys[name])
	}
	keys := mustKeys(t, strings.Join(lines, "\n"))
	opts := []Option{WithJobs(v.Verifier.Jobs...), WithURLPrefix(v.Verifier.URLPrefix)}
	if v.Verifier.AcceptV1 {
		opts = append(opts, WithV1Signatures())
	}
	return verdict(NewVerifier(keys, opts...).Verify(vectorDispatch(v, run), v.Signature))
}

func verdict(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrUnsigned):
		return "unsigned"
	case errors.Is(err, ErrNotAccepted):
		return "not_accepted"
	case errors.Is(err, ErrBadSignature):
		return "bad_signature"
	}
	return "error: " + err.Error()
}

func fenceCases() []fenceVector {
	slot := func(s int) string {
		return "nightly-billing/" + FormatScheduledAt(time.Date(2026, 11, 22, 1, 0, s, 0, time.UTC))
	}
	step := func(token uint64, key, want string) fenceStep {
		return fenceStep{Scope: "nightly-billing", Token: token, Key: key, Want: want}
	}
	return []fenceVector{
		{Name: "stale token", Steps: []fenceStep{
			step(5, slot(1), "applied"), step(4, slot(2), "stale")}},
		{Name: "paused leader: the old attempt arrives after the new one", Steps: []fenceStep{
			step(42, slot(1), "applied"), step(41, slot(1), "stale")}},
		{Name: "duplicate key: a newer attempt of an applied run", Steps: []fenceStep{
			step(5, slot(1), "applied"), step(6, slot(1), "duplicate"),
			// the duplicate's token stays admitted
			step(5, slot(2), "stale")}},
		{Name: "redelivery of the same attempt", Steps: []fenceStep{
			step(7, slot(1), "applied"), step(7, slot(1), "duplicate")}},
		{Name: "one token, two keys", Steps: []fenceStep{
			step(8, slot(1), "applied"), step(8, slot(2), "applied")}},
		{Name: "scopes are independent", Steps: []fenceStep{
			step(9, slot(1), "applied"),
			{Scope: "payroll", Token: 3, Key: "payroll/2026-11-22T01:00:01Z", Want: "applied"},
			{Scope: "payroll", Token: 2, Key: "payroll/2026-11-22T01:00:02Z", Want: "stale"}}},
		{Name: "a stale attempt changes nothing", Steps: []fenceStep{
			step(10, slot(1), "applied"), step(9, slot(2), "stale"), step(11, slot(2), "applied")}},
	}
}

// runFenceVector plays v's steps through BoltFence.Update and returns the outcomes and
// the keys whose write was applied, in order.
func runFenceVector(t *testing.T, v fenceVector) (outcomes []string, applied []string) {
	t.Helper()
	f := openTestBoltFence(t)
	for _, s := range v.Steps {
		run := Run{Token: s.Token, Job: "nightly-billing", RunID: "r", IdempotencyKey: s.Key,
			ScheduledAt: time.Unix(0, 0).UTC(), Attempt: 1}
		err := f.Update(context.Background(), run, s.Scope, func(*bbolt.Tx) error {
			applied = append(applied, s.Key)
			return nil
		})
		switch {
		case err == nil:
			outcomes = append(outcomes, "applied")
		case errors.Is(err, ErrStale):
			outcomes = append(outcomes, "stale")
		case errors.Is(err, ErrDuplicate):
			outcomes = append(outcomes, "duplicate")
		default:
			t.Fatalf("%s: %v", v.Name, err)
		}
	}
	return outcomes, applied
}

func buildVectors(t *testing.T) vectorFile {
	f := vectorFile{
		About: "Conformance vectors of raftcron's signatures and fences, written by " +
			"`go test ./fence -run TestVectors -update`; every kit under clients/ checks them. " +
			"See docs/fencing.md.",
		Keys: vectorKeys,
	}
	for _, c := range sigCases() {
		v := buildVector(t, c)
		if v.Verdict != c.want {
			t.Errorf("%s: Go says %s, want %s", c.name, v.Verdict, c.want)
		}
		f.Signatures = append(f.Signatures, v)
	}
	for _, c := range fenceCases() {
		got, applied := runFenceVector(t, c)
		for i, s := range c.Steps {
			if got[i] != s.Want {
				t.Errorf("%s, step %d (token %d, key %s): BoltFence says %s, want %s",
					c.Name, i+1, s.Token, s.Key, got[i], s.Want)
			}
		}
		c.Applied = applied
		f.Fence = append(f.Fence, c)
	}
	return f
}

// TestVectors checks that the committed vectors are what Go computes, and that Go's
// verdicts are the intended ones; -update rewrites the file.
func TestVectors(t *testing.T) {
	data, err := json.MarshalIndent(buildVectors(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	if *updateVectors {
		if err := os.MkdirAll(filepath.Dir(VectorsPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(VectorsPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(VectorsPath)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./fence -run TestVectors -update)", err)
	}
	if !bytes.Equal(committed, data) {
		t.Fatalf("%s differs from what Go computes: regenerate it with "+
			"go test ./fence -run TestVectors -update, and check the kits still pass", VectorsPath)
	}
}
