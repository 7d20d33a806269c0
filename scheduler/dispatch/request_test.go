package dispatch

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Every attempt of one target sends the whole of it, its body included,
// with its own attempt headers, however many attempts share its template.
func TestHTTPRepeatedAttemptsOfOneTargetSendItWhole(t *testing.T) {
	seen := make(chan seenRequest, 3)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- seenRequest{r.Method, r.Header.Clone(), r.Host, string(b)}
	})
	ex := NewHTTPExecutor(nil)
	a := httpAttempt(s.URL)
	a.HTTP.Body = "payload"
	a.HTTP.Headers = map[string]string{"x-custom": "yes"}
	for i := range 3 {
		a.Token, a.Number = uint64(100+i), uint32(i+1)
		wantState(t, ex.Execute(context.Background(), a), pb.RunState_RUN_STATE_SUCCEEDED, "http 200 OK")
		r := receive(t, seen, time.Second, "request")
		if r.body != "payload" || r.header.Get("X-Custom") != "yes" {
			t.Fatalf("attempt %d: body %q, X-Custom %q", i+1, r.body, r.header.Get("X-Custom"))
		}
		if got := r.header.Values(fence.HeaderFencingToken); len(got) != 1 || got[0] != a.token() {
			t.Fatalf("attempt %d: token %q, want [%s]", i+1, got, a.token())
		}
	}
}

// A job's new generation is a new spec, and its attempts go where the new
// spec says, though the job's earlier spec was sent just before.
func TestHTTPNewSpecOfAJobIsSentAsIs(t *testing.T) {
	paths := make(chan string, 2)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { paths <- r.URL.Path })
	ex := NewHTTPExecutor(nil)
	for _, path := range []string{"/gen1", "/gen2"} {
		wantState(t, ex.Execute(context.Background(), httpAttempt(s.URL+path)), pb.RunState_RUN_STATE_SUCCEEDED, "")
		if got := receive(t, paths, time.Second, "request"); got != path {
			t.Fatalf("request went to %s, want %s", got, path)
		}
	}
}

// Credentials in the URL are sent as Basic auth, as an http.Client sends
// them, unless the job sets Authorization itself.
func TestHTTPCredentialsInURLBecomeBasicAuth(t *testing.T) {
	auth := make(chan string, 1)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { auth <- r.Header.Get("Authorization") })
	withUser := "http://hook:s3cret@" + strings.TrimPrefix(s.URL, "http://")
	ex := NewHTTPExecutor(nil)

	wantState(t, ex.Execute(context.Background(), httpAttempt(withUser)), pb.RunState_RUN_STATE_SUCCEEDED, "")
	if got, want := receive(t, auth, time.Second, "request"), "Basic aG9vazpzM2NyZXQ="; got != want {
		t.Fatalf("Authorization %q, want %q", got, want)
	}
	a := httpAttempt(withUser)
	a.HTTP.Headers = map[string]string{"authorization": "Bearer tok"}
	wantState(t, ex.Execute(context.Background(), a), pb.RunState_RUN_STATE_SUCCEEDED, "")
	if got := receive(t, auth, time.Second, "request"); got != "Bearer tok" {
		t.Fatalf("Authorization %q, want the job's own", got)
	}
}

func TestTemplatesStayBounded(t *testing.T) {
	var c templates
	first := &pb.HttpTarget{Url: "http://127.0.0.1:1/", Method: "POST"}
	if _, err := c.get(first); err != nil {
		t.Fatal(err)
	}
	for i := range maxTemplates {
		if _, err := c.get(&pb.HttpTarget{Url: "http://127.0.0.1:1/", Method: "POST"}); err != nil {
			t.Fatal(err)
		}
		if i == maxTemplates-2 {
			if n := c.len(); n != maxTemplates {
				t.Fatalf("%d templates kept, want all %d up to the bound", n, maxTemplates)
			}
		}
	}
	if n := c.len(); n > maxTemplates {
		t.Fatalf("%d templates kept, bound %d", n, maxTemplates)
	}
	if _, ok := c.m.Load(first); ok {
		t.Fatal("the first target is still kept after the bound was passed")
	}
}

// A target that cannot make a request fails each attempt and is not kept.
func TestTemplatesKeepNoBrokenTarget(t *testing.T) {
	var c templates
	if _, err := c.get(&pb.HttpTarget{Url: "http://[::1", Method: "POST"}); err == nil {
		t.Fatal("a bad URL made a template")
	}
	if n := c.len(); n != 0 {
		t.Fatalf("%d templates kept", n)
	}
}

func (c *templates) len() int {
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	return n
}

// The attempt's values are those IdempotencyKey and the fence headers
// define, whatever the length of the job's name.
func TestAttemptHeaderValues(t *testing.T) {
	for _, job := range []string{"billing", strings.Repeat("j", 200)} {
		a := Attempt{Job: job, Token: 18446744073709551615, ScheduledAt: slot.Add(900 * time.Millisecond).In(time.FixedZone("X", 3600))}
		token, at, key := a.token(), a.scheduledAt(), a.idempotencyKey(a.scheduledAt())
		if token != "18446744073709551615" || at != "2026-11-22T01:02:03Z" || key != a.IdempotencyKey() {
			t.Fatalf("got %q %q %q, want key %q", token, at, key, a.IdempotencyKey())
		}
	}
}
