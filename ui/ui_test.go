package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/ui"
)

func get(t *testing.T, url string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPagesAreServedWithTypeVersionAndPolicy(t *testing.T) {
	node := newFakeNode(t, nil)
	for path, typ := range map[string]string{
		"/ui/":                     "text/html; charset=utf-8",
		"/ui/js/app.js":            "text/javascript; charset=utf-8",
		"/ui/style.css":            "text/css; charset=utf-8",
		"/ui/vendor/preact-htm.js": "text/javascript; charset=utf-8",
	} {
		resp := get(t, node.url+path, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != typ {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), typ)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: the pages may reach only their own node; CSP %q", path, csp)
		}
	}
	index := body(t, get(t, node.url+"/ui/", nil))
	if !strings.Contains(index, `content="v0.0.0-test"`) || strings.Contains(index, "%RAFTCRON_VERSION%") {
		t.Errorf("index.html carries the node's version:\n%s", index)
	}
	if resp := get(t, node.url+"/ui/no-such.js", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET a missing file: %d, want 404", resp.StatusCode)
	}
}

func TestPagesRevalidateByETag(t *testing.T) {
	node := newFakeNode(t, nil)
	first := get(t, node.url+"/ui/js/app.js", nil)
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q: want an ETag and no-cache", etag, first.Header.Get("Cache-Control"))
	}
	if resp := get(t, node.url+"/ui/js/app.js", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET with the current ETag: %d, want 304", resp.StatusCode)
	}
}

func TestPagesRefuseOtherMethods(t *testing.T) {
	node := newFakeNode(t, nil)
	resp, err := http.Post(node.url+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", resp.StatusCode)
	}
	if resp := get(t, node.url+"/ui/api/nothing", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET an unknown UI endpoint: %d, want 404", resp.StatusCode)
	}
}

func TestWhoAmI(t *testing.T) {
	node := newFakeNode(t, aclTokens())
	for _, tc := range []struct {
		name, auth string
		status     int
		want       string
	}{
		{"no token", "", http.StatusUnauthorized, `"code":16`},
		{"not bearer", "Basic abc", http.StatusUnauthorized, `want \"Bearer \u003csecret\u003e\"`},
		{"unknown token", "Bearer nope", http.StatusUnauthorized, "unknown ACL token"},
		{"read token", "Bearer " + viewerSecret, http.StatusOK, `{"name":"viewer","role":"read"}`},
		{"management token", "bearer " + opsSecret, http.StatusOK, `{"name":"ops","role":"management"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, node.url+"/ui/api/whoami", map[string]string{"Authorization": tc.auth})
			got := body(t, resp)
			if resp.StatusCode != tc.status || !strings.Contains(got, tc.want) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, got, tc.status, tc.want)
			}
			if resp.Header.Get("Cache-Control") != "no-store" {
				t.Error("an identity must not be cached")
			}
		})
	}
}

func TestWhoAmIWithACLsOff(t *testing.T) {
	node := newFakeNode(t, nil)
	resp := get(t, node.url+"/ui/api/whoami", nil)
	if got := body(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(got, `"role":"management"`) {
		t.Errorf("ACLs off: %d %s, want 200 and role management", resp.StatusCode, got)
	}
}

// sse reads a server-sent event stream.
type sse struct {
	t *testing.T
	r *bufio.Reader
}

type event struct{ name, data string }

func openEvents(t *testing.T, url, secret string) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %q: %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), body(t, resp))
	}
	return &sse{t: t, r: bufio.NewReader(resp.Body)}
}

// next is the next event, skipping comments (heartbeats).
func (s *sse) next() event {
	s.t.Helper()
	var ev event
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("event stream ended: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && ev.name != "":
			return ev
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestRunEventsStreamRunsAsTheAPIShowsThem(t *testing.T) {
	node := newFakeNode(t, aclTokens())
	node.apply(billingSpec())
	stream := openEvents(t, node.url+"/ui/api/runs/events", viewerSecret)
	if ev := stream.next(); ev.name != "ready" {
		t.Fatalf("first event %q, want ready", ev.name)
	}
	node.fire("billing", scheduled, succeeded)
	ev := stream.next()
	var run map[string]any
	if err := json.Unmarshal([]byte(ev.data), &run); err != nil || ev.name != "run" {
		t.Fatalf("event %q %s (%v), want a run", ev.name, ev.data, err)
	}
	if run["id"] != "billing-1" || run["state"] != "RUN_STATE_SUCCEEDED" || run["slot_unix"] == nil {
		t.Errorf("run %v: want the JSON API's shape (proto field names, enum names)", run)
	}
}

func TestRunEventsFollowTheJobFilter(t *testing.T) {
	node := newFakeNode(t, aclTokens())
	stream := openEvents(t, node.url+"/ui/api/runs/events?job=other", viewerSecret)
	stream.next() // ready
	node.fire("billing", scheduled, succeeded)
	node.fire("other", scheduled, succeeded)
	if ev := stream.next(); !strings.Contains(ev.data, `"job":"other"`) {
		t.Errorf("a watch of job other got %s", ev.data)
	}
}

func TestRunEventsRefuseBeforeStreaming(t *testing.T) {
	node := newFakeNode(t, aclTokens())
	for _, tc := range []struct {
		name, path, auth string
		status           int
		want             string
	}{
		{"no token", "", "", http.StatusUnauthorized, "unknown ACL token"},
		{"malformed", "", "Token x", http.StatusUnauthorized, "Bearer"},
		{"bad job filter", "?job=Not%20A%20Name", "Bearer " + viewerSecret, http.StatusBadRequest, "job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, node.url+"/ui/api/runs/events"+tc.path, map[string]string{"Authorization": tc.auth})
			got := body(t, resp)
			if resp.StatusCode != tc.status || !strings.Contains(got, tc.want) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%d %q %s, want %d JSON with %q", resp.StatusCode, resp.Header.Get("Content-Type"), got, tc.status, tc.want)
			}
		})
	}
}

func TestRunEventsEndWithAReasonWhenTheNodeStops(t *testing.T) {
	node := newFakeNode(t, aclTokens())
	stream := openEvents(t, node.url+"/ui/api/runs/events", viewerSecret)
	stream.next() // ready
	node.hub.Close()
	ev := stream.next()
	if ev.name != "error" || !strings.Contains(ev.data, `"code":14`) {
		t.Errorf("event %q %s, want error with code 14 (Unavailable)", ev.name, ev.data)
	}
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := ui.New(ui.Config{}); !errors.Is(err, ui.ErrConfig) {
		t.Errorf("New without Identity and Runs: %v, want ErrConfig", err)
	}
}
