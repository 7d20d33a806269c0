package ops

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHostsAllow(t *testing.T) {
	t.Parallel()
	h, err := NewHosts([]string{"raftcron.example", " N1.Internal. ", ""})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"127.0.0.1":               true,
		"127.0.0.1:8001":          true,
		"10.0.0.7:8001":           true,
		"[::1]:8001":              true,
		"[::1]":                   true,
		"[2001:db8::5]:443":       true,
		"[::ffff:127.0.0.1]:8001": true,
		"localhost":               true,
		"LOCALHOST:8001":          true,
		"localhost.:8001":         true,
		"raftcron.example":        true,
		"RaftCron.Example:8443":   true,
		"n1.internal:8001":        true,
		"n1.internal.":            true,

		"evil.example":             false,
		"evil.example:8001":        false,
		"app.localhost:8001":       false, // decided: only localhost itself
		"localhost.evil.example":   false,
		"raftcron.example.evil":    false,
		"sub.raftcron.example":     false,
		"":                         false,
		":8001":                    false,
		"raftcron.example:80x":     false,
		"2130706433":               false, // a browser sends the dotted form; this is a name
		"[evil.example]:8001":      false,
		"127.0.0.1.evil.example":   false,
		"127.0.0.1:8001@evil":      false,
		"evil.example#127.0.0.1":   false,
		"0x7f.0.0.1":               false,
		"raftcron.example:8001:80": false,
	} {
		if got := h.Allow(host); got != want {
			t.Errorf("Allow(%q) = %v, want %v", host, got, want)
		}
	}
	var none *Hosts
	if !none.Allow("127.0.0.1:8001") || !none.Allow("localhost") || none.Allow("raftcron.example") {
		t.Error("a nil Hosts must answer IP literals and localhost, and no name")
	}
}

func TestNewHostsRefusesWhatIsNoName(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"raftcron.example:8001", "https://raftcron.example", "*.example", "a..b", "a b", "[::1]", strings.Repeat("a", 64) + ".example"} {
		if _, err := NewHosts([]string{bad}); !errors.Is(err, ErrHostName) || !strings.Contains(err.Error(), bad) {
			t.Errorf("NewHosts(%q) = %v, want ErrHostName naming it", bad, err)
		}
	}
	if _, err := NewHosts([]string{"10.0.0.7", "::1", "raft_cron-1.example"}); err != nil {
		t.Errorf("addresses and names with '_' or '-': %v", err)
	}
}

// TestMountedRoutesCheckTheHost: a rebound Host gets 421 on everything
// mounted, before its handler runs; the ops endpoints answer any Host, for
// probes and Prometheus that call the node by a name it was not told.
func TestMountedRoutesCheckTheHost(t *testing.T) {
	t.Parallel()
	n := &fakeNode{}
	n.ready.Store(true)
	hosts, err := NewHosts([]string{"raftcron.example"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(n, fakeRegistry{}, "v-test", hosts)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Add(1) })
	s.Mount("/v1/", handler)
	s.Mount("/ui/", handler)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	do := func(method, path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(`{"name":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/v1/jobs", "/v1/openapi.json", "/ui/", "/ui/api/runs/events", "/ui/api/whoami"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			code, body := do(method, path, "evil.example")
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, `"code":7`) || !strings.Contains(body, "--http-host") {
				t.Errorf("%s %s with Host evil.example = %d %s, want 421 naming --http-host", method, path, code, body)
			}
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the mounted handler ran %d times for a refused Host", n)
	}
	for _, host := range []string{"127.0.0.1:8001", "[::1]:8001", "localhost:8001", "raftcron.example"} {
		if code, _ := do(http.MethodGet, "/v1/jobs", host); code != http.StatusOK {
			t.Errorf("/v1/jobs with Host %s = %d, want the handler", host, code)
		}
	}
	if n := ran.Load(); n != 4 {
		t.Fatalf("the mounted handler ran %d times for 4 allowed requests", n)
	}
	for _, path := range []string{"/livez", "/readyz", "/status", "/metrics"} {
		if code, _ := do(http.MethodGet, path, "raftcron-0.raftcron.default.svc"); code != http.StatusOK {
			t.Errorf("%s by a name not listed = %d, want 200: probes and scrapes use names", path, code)
		}
	}
}
