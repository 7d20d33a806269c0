package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// httpCall sends one JSON API request to s, as "Bearer secret" unless
// secret is "", and returns the status and the decoded answer.
func httpCall(t *testing.T, s *Server, method, path, secret string) (int, map[string]any) {
	t.Helper()
	return httpSend(t, s, method, path, "", secret)
}

func httpSend(t *testing.T, s *Server, method, path, body, secret string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, opsURL(s, path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := opsClient(s).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("%s %s: %d, the answer is no JSON object: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, doc
}

// The node serves the JSON API on its HTTP port through its own gRPC
// server: with ACLs on, a call needs a token, a token's role bounds what it
// may do, and the trail records who wrote.
func TestTheJSONAPIIsServedBehindTheACLs(t *testing.T) {
	s := startCluster(t, 1, func(c *Config) { c.ACL = true })[0]
	leaderOf(t, []*Server{s})

	if code, doc := httpCall(t, s, "GET", "/v1/jobs", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/jobs without a token: %d %v, want 401", code, doc)
	}
	secret := bootstrapToken(t, s)
	if code, doc := httpCall(t, s, "GET", "/v1/jobs", secret); code != http.StatusOK {
		t.Fatalf("GET /v1/jobs with the management token: %d %v, want 200", code, doc)
	}
	code, doc := httpCall(t, s, "GET", "/v1/audit", secret)
	recs, _ := doc["records"].([]any)
	if code != http.StatusOK || len(recs) == 0 || recs[0].(map[string]any)["action"] != "acl_bootstrap" {
		t.Fatalf("GET /v1/audit: %d %v, want the bootstrap recorded", code, doc)
	}
	if code, _ := httpCall(t, s, "GET", "/v1/openapi.json", ""); code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d, want 200", code)
	}
}

// Under TLS the JSON API still reaches the node's gRPC server, over a
// connection that presents no certificate: an HTTP caller acts for
// nobody, never for the node, whose certificate would make it the node.
func TestTheJSONAPIUnderTLSActsForItsCallerNotTheNode(t *testing.T) {
	opt, _, _ := withTLS(t)
	s := startCluster(t, 1, opt)[0]
	leaderOf(t, []*Server{s})

	spec := `{"schedule": "@hourly", "http": {"url": "http://127.0.0.1:1/"}}`
	if code, doc := httpSend(t, s, "PUT", "/v1/jobs/hourly", spec, ""); code != http.StatusOK {
		t.Fatalf("PUT /v1/jobs/hourly on a TLS node: %d %v, want 200", code, doc)
	}
	job, err := s.FSM().Job("hourly")
	if err != nil {
		t.Fatal(err)
	}
	if by := job.GetUpdatedBy(); by != "anonymous" {
		t.Fatalf("the job was written by %q, want anonymous: the JSON API must not act as the node", by)
	}
}
