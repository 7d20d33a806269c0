package ledger_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

// With a verifier, a delivery is written only if it carries a v2 signature of exactly
// what was sent, for a job the ledger accepts: a forged, altered, v1 or unsigned one is
// refused with 401, a genuine one for another job with 403, and neither reaches the fence.
func TestVerifyingLedgerTakesGenuineV2Only(t *testing.T) {
	t.Parallel()
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.ScopeJob, fence.WithOpenTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &service{ledger: l, server: ledger.NewServer(l, nil,
		ledger.WithVerifier(fence.NewVerifier(keys, fence.WithJobs("nightly-billing"))))}

	const body = `{"mode":"full"}`
	request := func(run fence.Run, sentBody string, sign func(*http.Request) string) *http.Request {
		req := httptest.NewRequest(http.MethodPost, "http://ledger.example/run?x=1", strings.NewReader(sentBody))
		run.SetHeader(req.Header)
		if sig := sign(req); sig != "" {
			req.Header.Set(fence.HeaderSignature, sig)
		}
		return req
	}
	v2 := func(run fence.Run) func(*http.Request) string {
		return func(req *http.Request) string {
			sig, err := keys.SignV2(fence.HTTPDispatch(run, req.Method, "http://ledger.example/run?x=1", []byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			return sig
		}
	}
	other := runOf("other-job", slot, 9, 1)
	for _, c := range []struct {
		name string
		req  *http.Request
		code int
	}{
		{"unsigned", request(attempt(7, 1), body, func(*http.Request) string { return "" }), 401},
		{"genuine v1", request(attempt(7, 1), body, func(*http.Request) string { return keys.Sign(attempt(7, 1)) }), 401},
		{"v2 of another body", request(attempt(7, 1), `{"mode":"refund"}`, v2(attempt(7, 1))), 401},
		{"v2 of another token", request(attempt(8, 1), body, v2(attempt(7, 1))), 401},
		{"genuine v2 of another job", request(other, body, v2(other)), 403},
	} {
		if code, reply := s.do(t, c.req); code != c.code || !strings.HasPrefix(reply["error"].(string), "fence: ") {
			t.Errorf("%s: %d %v, want %d and fence's refusal", c.name, code, reply, c.code)
		}
	}
	if got := s.entries(t); len(got) != 0 {
		t.Fatalf("refused deliveries wrote %+v", got)
	}
	var decisions []ledger.Decision
	s.get(t, "/decisions", &decisions)
	for _, d := range decisions {
		if d.Outcome != ledger.OutcomeUnverified {
			t.Errorf("decision %v, want %s", d, ledger.OutcomeUnverified)
		}
	}
	if code, reply := s.do(t, request(attempt(7, 1), body, v2(attempt(7, 1)))); code != 200 || reply["status"] != "applied" {
		t.Fatalf("genuine v2: %d %v, want applied", code, reply)
	}
}
