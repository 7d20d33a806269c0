package ledger_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

func TestAppliedThenDuplicateThenStale(t *testing.T) {
	t.Parallel()
	s := newService(t)
	steps := []struct {
		name string
		run  fence.Run
		code int
		want map[string]any
	}{
		{"first attempt", attempt(5, 1), 200, map[string]any{"status": "applied", "seq": 1.0}},
		{"retry with a newer token", attempt(6, 2), 200, map[string]any{"status": "duplicate"}},
		{"paused leader's older token", attempt(4, 1), 409, map[string]any{
			"error": "stale fencing token", "token": 4.0, "highest": 6.0, "scope": "nightly-billing"}},
	}
	for _, st := range steps {
		code, reply := s.deliver(t, st.run)
		if code != st.code || !reflect.DeepEqual(reply, st.want) {
			t.Fatalf("%s: %d %v, want %d %v", st.name, code, reply, st.code, st.want)
		}
	}

	got := s.entries(t)
	if len(got) != 1 {
		t.Fatalf("ledger holds %d entries, want exactly 1: %+v", len(got), got)
	}
	sum := sha256.Sum256([]byte(`{"mode":"full"}`))
	e := got[0]
	want := ledger.Entry{
		Seq: 1, Job: "nightly-billing", RunID: "nightly-billing-020000", Token: 5, Attempt: 1,
		ScheduledAt: slot, ReceivedAt: e.ReceivedAt, BodySHA256: hex.EncodeToString(sum[:]),
	}
	if !reflect.DeepEqual(e, want) || e.ReceivedAt.IsZero() {
		t.Fatalf("entry = %+v, want %+v", e, want)
	}
}

func TestBadHeadersAreRefusedAndWriteNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		edit    func(http.Header)
		body    string
		code    int
		wantErr string
	}{
		{"no headers", func(h http.Header) { clear(h) }, "", 400, "X-Raftcron-Fencing-Token: missing"},
		{"missing token", func(h http.Header) { h.Del(fence.HeaderFencingToken) }, "", 400, "X-Raftcron-Fencing-Token: missing"},
		{"garbled token", func(h http.Header) { h.Set(fence.HeaderFencingToken, "12abc") }, "", 400, "X-Raftcron-Fencing-Token: not an unsigned integer"},
		{"negative token", func(h http.Header) { h.Set(fence.HeaderFencingToken, "-3") }, "", 400, "X-Raftcron-Fencing-Token: not an unsigned integer"},
		{"token 0", func(h http.Header) { h.Set(fence.HeaderFencingToken, "0") }, "", 400, "X-Raftcron-Fencing-Token: token 0 is never issued"},
		{"token twice", func(h http.Header) { h.Add(fence.HeaderFencingToken, "101") }, "", 400, "X-Raftcron-Fencing-Token: given 2 times"},
		{"missing job", func(h http.Header) { h.Del(fence.HeaderJob) }, "", 400, "X-Raftcron-Job: missing"},
		{"bad job name", func(h http.Header) { h.Set(fence.HeaderJob, "Nightly Billing") }, "", 400, "X-Raftcron-Job: not a job name"},
		{"missing key", func(h http.Header) { h.Del(fence.HeaderIdempotencyKey) }, "", 400, "Idempotency-Key: missing"},
		{"local time", func(h http.Header) { h.Set(fence.HeaderScheduledAt, "2026-11-22T03:00:00+01:00") }, "", 400, "X-Raftcron-Scheduled-At: not in UTC"},
		{"attempt 0", func(h http.Header) { h.Set(fence.HeaderAttempt, "0") }, "", 400, "X-Raftcron-Attempt: attempts are numbered from 1"},
		{"body too large", func(http.Header) {}, strings.Repeat("x", ledger.MaxBody+1), 413, "body: larger than"},
	}
	s := newService(t)
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/run", strings.NewReader(c.body))
		attempt(100, 1).SetHeader(req.Header) // a high token, so that a recorded one would show
		c.edit(req.Header)
		code, reply := s.do(t, req)
		msg, _ := reply["error"].(string)
		if code != c.code || !strings.HasPrefix(msg, c.wantErr) {
			t.Errorf("%s: %d %v, want %d with an error starting %q", c.name, code, reply, c.code, c.wantErr)
		}
	}

	if got := s.entries(t); len(got) != 0 {
		t.Fatalf("refused requests wrote %d entries: %+v", len(got), got)
	}
	// Had any refused request reached the fence, token 100 would be admitted and 50 stale;
	// had it reached the dedupe store, this run would be a duplicate.
	if code, reply := s.deliver(t, attempt(50, 1)); code != 200 || reply["status"] != "applied" {
		t.Fatalf("valid delivery after the refused ones = %d %v, want applied", code, reply)
	}
	var decisions []ledger.Decision
	s.get(t, "/decisions", &decisions)
	if len(decisions) != len(cases)+1 {
		t.Fatalf("%d decisions, want %d (every refusal and the applied run)", len(decisions), len(cases)+1)
	}
	for _, d := range decisions[1:] {
		if d.Outcome != ledger.OutcomeBad || d.Detail == "" {
			t.Fatalf("refused request recorded as %+v, want bad_request with a detail", d)
		}
	}
}

func TestIndexShowsAcceptedAndRefusedWrites(t *testing.T) {
	t.Parallel()
	s := newService(t)
	s.deliver(t, attempt(5, 1))
	s.deliver(t, attempt(6, 2))
	s.deliver(t, attempt(4, 1))
	s.do(t, httptest.NewRequest(http.MethodPost, "/run", nil))
	wantOutcomes := []ledger.Outcome{ledger.OutcomeBad, ledger.OutcomeStale, ledger.OutcomeDuplicate, ledger.OutcomeApplied}

	page := s.get(t, "/", nil)
	var rows [][]string
	for _, line := range strings.Split(page, "\n") {
		if f := strings.Fields(line); len(f) >= 7 && f[0] != "TIME" && f[0] != "ledger:" {
			rows = append(rows, f)
		}
	}
	if len(rows) != len(wantOutcomes) {
		t.Fatalf("GET / lists %d decisions, want %d:\n%s", len(rows), len(wantOutcomes), page)
	}
	for i, want := range wantOutcomes {
		if rows[i][6] != string(want) {
			t.Fatalf("GET / row %d has outcome %q, want %q (newest first):\n%s", i, rows[i][6], want, page)
		}
	}
	if got := strings.Join(rows[3][1:8], " "); got != "nightly-billing 2026-11-22T02:00:00Z 5 1 nightly-billing-020000 applied seq" {
		t.Fatalf("applied row = %q", got)
	}
	if got := strings.Join(rows[1][3:], " "); got != "4 1 nightly-billing-020000 stale highest 6" {
		t.Fatalf("stale row = %q", got)
	}

	var decisions []ledger.Decision
	s.get(t, "/decisions", &decisions)
	var got []ledger.Outcome
	for _, d := range decisions {
		got = append(got, d.Outcome)
	}
	if !reflect.DeepEqual(got, wantOutcomes) {
		t.Fatalf("GET /decisions outcomes = %v, want %v", got, wantOutcomes)
	}
}

func TestOneLinePerDecisionOnStdout(t *testing.T) {
	t.Parallel()
	s := newService(t)
	s.deliver(t, attempt(5, 1))
	s.deliver(t, attempt(4, 1))
	s.do(t, httptest.NewRequest(http.MethodPost, "/run", nil))

	lines := strings.Split(strings.TrimSuffix(s.out.String(), "\n"), "\n")
	want := []string{
		" nightly-billing 2026-11-22T02:00:00Z token=5 attempt=1 applied seq=1",
		" nightly-billing 2026-11-22T02:00:00Z token=4 attempt=1 stale (highest 5)",
		" - - token=- attempt=- bad_request (X-Raftcron-Fencing-Token: missing)",
	}
	if len(lines) != len(want) {
		t.Fatalf("stdout has %d lines, want %d:\n%s", len(lines), len(want), s.out)
	}
	for i, line := range lines {
		stamp, rest, _ := strings.Cut(line, " ")
		if _, err := time.Parse(time.RFC3339, stamp); err != nil || " "+rest != want[i] {
			t.Errorf("line %d = %q, want a time then %q", i, line, want[i])
		}
	}
}

func TestConcurrentDeliveriesOfOneRunWriteOneEntry(t *testing.T) {
	t.Parallel()
	const n = 16
	for _, sameToken := range []bool{true, false} {
		t.Run(fmt.Sprintf("same token %v", sameToken), func(t *testing.T) {
			s := newService(t)
			srv := httptest.NewServer(s.server)
			defer srv.Close()

			statuses := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				run := attempt(10, 1)
				if !sameToken {
					run = attempt(10+uint64(i), uint32(i+1))
				}
				wg.Go(func() { statuses[i] = post(t, srv.URL+"/run", run) })
			}
			wg.Wait()

			count := map[string]int{}
			for _, st := range statuses {
				count[st]++
			}
			if count["200 applied"] != 1 || count["200 applied"]+count["200 duplicate"]+count["409 stale"] != n {
				t.Fatalf("outcomes %v, want one applied and the rest duplicate or stale", count)
			}
			if sameToken && count["200 duplicate"] != n-1 {
				t.Fatalf("outcomes %v, want every repeat of the same attempt to be a duplicate", count)
			}
			if got := s.entries(t); len(got) != 1 {
				t.Fatalf("%d entries after %d concurrent deliveries of one run, want 1", len(got), n)
			}
		})
	}
}

// post delivers run over HTTP and returns "STATUS outcome".
func post(t *testing.T, url string, run fence.Run) string {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Error(err)
		return err.Error()
	}
	run.SetHeader(req.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return err.Error()
	}
	defer resp.Body.Close()
	var reply struct{ Status, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Error(err)
	}
	if resp.StatusCode == http.StatusConflict && reply.Error == "stale fencing token" {
		return "409 stale"
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, reply.Status)
}

func TestScopeDecidesWhichRunsFenceEachOther(t *testing.T) {
	t.Parallel()
	later := slot.Add(time.Hour)
	cases := []struct {
		scope     ledger.Scope
		olderCode int // an older token of another run of the same job
	}{
		{ledger.ScopeJob, 409},
		{ledger.ScopeRun, 200},
	}
	for _, c := range cases {
		s := open(t, filepath.Join(t.TempDir(), "ledger.db"), c.scope)
		if code, _ := s.deliver(t, runOf("sync", later, 10, 1)); code != 200 {
			t.Fatalf("scope %s: first run = %d, want 200", c.scope, code)
		}
		if code, reply := s.deliver(t, runOf("sync", slot, 5, 1)); code != c.olderCode {
			t.Fatalf("scope %s: older token of another run = %d %v, want %d", c.scope, code, reply, c.olderCode)
		}
		// Whatever the scope, attempts of one run fence each other.
		if code, reply := s.deliver(t, runOf("sync", later, 9, 2)); code != 409 {
			t.Fatalf("scope %s: older attempt of the same run = %d %v, want 409", c.scope, code, reply)
		}
	}
}

func TestEntriesQuery(t *testing.T) {
	t.Parallel()
	s := newService(t)
	s.deliver(t, runOf("a", slot, 1, 1))
	s.deliver(t, runOf("b", slot, 2, 1))
	s.deliver(t, runOf("a", slot.Add(time.Minute), 3, 1))
	for query, want := range map[string][]uint64{
		"/entries":               {1, 2, 3},
		"/entries?job=a":         {1, 3},
		"/entries?after=1":       {2, 3},
		"/entries?job=a&after=1": {3},
		"/entries?job=c":         {},
		"/entries?after=3":       {},
	} {
		var list []ledger.Entry
		s.get(t, query, &list)
		got := []uint64{}
		for _, e := range list {
			got = append(got, e.Seq)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s = seqs %v, want %v", query, got, want)
		}
	}
	code, reply := s.do(t, httptest.NewRequest(http.MethodGet, "/entries?after=x", nil))
	if code != 400 || !strings.HasPrefix(reply["error"].(string), "after: ") {
		t.Fatalf("GET /entries?after=x = %d %v, want 400 naming after", code, reply)
	}
}

func TestReadsAreNotDeliveries(t *testing.T) {
	t.Parallel()
	s := newService(t)
	var health map[string]any
	s.get(t, "/healthz", &health)
	if health["status"] != "ok" {
		t.Fatalf("GET /healthz = %v", health)
	}
	req := httptest.NewRequest(http.MethodGet, "/run", nil)
	attempt(5, 1).SetHeader(req.Header)
	if code, _ := s.do(t, req); code != 404 {
		t.Fatalf("GET /run = %d, want 404", code)
	}
	var decisions []ledger.Decision
	if s.get(t, "/decisions", &decisions); len(decisions) != 0 || len(s.entries(t)) != 0 {
		t.Fatalf("reads were recorded: %d decisions, %d entries", len(decisions), len(s.entries(t)))
	}
}
