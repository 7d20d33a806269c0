package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
)

// sendAs sends one request to s's ops port as a browser on the page
// http://host would: with that Host, Origin and Sec-Fetch-Site same-origin
// (a rebound page is same-origin to the browser).
func sendAs(t *testing.T, s *Server, host, method, path, body, secret string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, opsURL(s, path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Origin", "http://"+host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := opsClient(s).Do(req)
	if err != nil {
		t.Fatalf("%s %s as %s: %v", method, path, host, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A page on a name the attacker controls, rebound to the node's address,
// gets 421 from the JSON API, the UI and its event stream, with ACLs off
// (where it would otherwise create a job) and on; IP literals, localhost
// and the names of --http-host reach them; the ops endpoints answer any
// Host.
func TestAReboundHostIsMisdirected(t *testing.T) {
	for _, acl := range []bool{false, true} {
		t.Run(map[bool]string{false: "acl off", true: "acl on"}[acl], func(t *testing.T) {
			s := startCluster(t, 1, func(c *Config) { c.ACL = acl; c.HTTPHosts = []string{"raftcron.example"} })[0]
			leaderOf(t, []*Server{s})
			secret := ""
			if acl {
				secret = bootstrapToken(t, s)
			}
			spec := `{"schedule": "@hourly", "http": {"url": "http://127.0.0.1:1/"}}`
			for _, host := range []string{"evil.example", "evil.example:" + portOf(s.HTTPAddr()), "app.localhost"} {
				for _, r := range []struct{ method, path, body string }{
					{"PUT", "/v1/jobs/rebound", spec},
					{"GET", "/v1/jobs", ""},
					{"GET", "/v1/openapi.json", ""},
					{"GET", "/ui/", ""},
					{"GET", "/ui/api/whoami", ""},
					{"GET", "/ui/api/runs/events", ""},
				} {
					if code, body := sendAs(t, s, host, r.method, r.path, r.body, secret); code != http.StatusMisdirectedRequest {
						t.Errorf("%s %s as %s: %d %s, want 421", r.method, r.path, host, code, body)
					}
				}
			}
			if _, err := s.FSM().Job("rebound"); !errors.Is(err, fsm.ErrNotFound) {
				t.Fatalf("job rebound after the refused PUTs: %v, want not found: the handler ran", err)
			}
			for _, path := range []string{"/livez", "/readyz", "/status", "/metrics"} {
				if code, _ := sendAs(t, s, "evil.example", "GET", path, "", ""); code != http.StatusOK {
					t.Errorf("GET %s as evil.example: %d, want 200 (probes and scrapes call by name)", path, code)
				}
			}
			for i, host := range []string{s.HTTPAddr(), "[::1]:" + portOf(s.HTTPAddr()), "localhost:" + portOf(s.HTTPAddr()), "RaftCron.Example"} {
				name := "allowed-" + string(rune('a'+i))
				if code, body := sendAs(t, s, host, "PUT", "/v1/jobs/"+name, spec, secret); code != http.StatusOK {
					t.Errorf("PUT /v1/jobs/%s as %s: %d %s, want 200", name, host, code, body)
				}
			}
		})
	}
}

func portOf(hostport string) string {
	return hostport[strings.LastIndexByte(hostport, ':')+1:]
}

func TestValidateRefusesABadHTTPHost(t *testing.T) {
	cfg := Config{ID: "n1", DataDir: t.TempDir(), Addr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:8001", HTTPHosts: []string{"raftcron.example:8001"}}
	var ce *cluster.ConfigError
	err := cfg.Validate()
	if !errors.As(err, &ce) || ce.Field != FieldHTTPHosts || !strings.Contains(ce.Rule, "raftcron.example:8001") {
		t.Fatalf("Validate: %v, want a ConfigError of %s naming the value", err, FieldHTTPHosts)
	}
}
