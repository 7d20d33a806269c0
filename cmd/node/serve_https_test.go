package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeTLSOpsPortIsHTTPS: with the TLS flags the ops port is HTTPS
// with the node's certificate (the cluster's readiness wait reads it so),
// the JSON API answers a bearer token over it, a plain-HTTP request gets
// no status, and --health-addr serves the probes in plain HTTP.
func TestServeTLSOpsPortIsHTTPS(t *testing.T) {
	files := newTLSFiles(t, "n1")
	healthAddr := freeAddrs(t, 1)[0]
	c := startClusterWith(t, 1, func(id string) []string {
		return []string{"--tls-cert", files.path("node-" + id + ".pem"), "--tls-key", files.path("node-" + id + "-key.pem"),
			"--tls-ca", files.path("ca.pem"), "--acl", "--health-addr", healthAddr}
	})
	n1 := c.Nodes[0]
	plain := &http.Client{Timeout: cliTimeout}

	t.Run("plain HTTP refused on the ops port", func(t *testing.T) {
		resp, err := plain.Get("http://" + n1.HTTPAddr + "/status")
		if err != nil {
			return // closed unanswered is refused too
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "fencing_token") {
			t.Fatalf("plain GET /status on a TLS node: %d %q, want it refused", resp.StatusCode, body)
		}
	})
	t.Run("probes on --health-addr", func(t *testing.T) {
		for path, want := range map[string]int{"/livez": 200, "/readyz": 200, "/status": 404, "/v1/jobs": 404} {
			resp, err := plain.Get("http://" + healthAddr + path)
			if err != nil {
				t.Fatalf("GET %s on --health-addr: %v", path, err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s on --health-addr: %d, want %d", path, resp.StatusCode, want)
			}
		}
	})
	t.Run("JSON API over HTTPS with a token", func(t *testing.T) {
		env := []string{"RAFTCRON_CA_CERT=" + files.path("ca.pem")}
		var boot tokenView
		r := expectOK(t, runCLIEnv(t, env, "", "acl", "bootstrap", "-o", "json", "--addr", n1.Addr))
		if err := json.Unmarshal([]byte(r.Stdout), &boot); err != nil || boot.Secret == "" {
			t.Fatalf("acl bootstrap: %v\n%s", err, r.Stdout)
		}
		client, err := n1.opsClient()
		if err != nil {
			t.Fatal(err)
		}
		for secret, want := range map[string]int{"": http.StatusUnauthorized, boot.Secret: http.StatusOK} {
			req, err := http.NewRequest(http.MethodGet, n1.opsURL("/v1/jobs"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if secret != "" {
				req.Header.Set("Authorization", "Bearer "+secret)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("GET /v1/jobs over HTTPS: %v", err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != want || resp.TLS == nil {
				t.Errorf("GET /v1/jobs over HTTPS (token %v): %d (TLS %v), want %d over TLS", secret != "", resp.StatusCode, resp.TLS != nil, want)
			}
		}
	})
}

func TestServeConfigHealthAddr(t *testing.T) {
	t.Setenv("RAFTCRON_HEALTH_ADDR", "0.0.0.0:8081")
	cfg, err := loadForTest(t, minimal...)
	if err != nil || cfg.HealthAddr != "0.0.0.0:8081" {
		t.Fatalf("RAFTCRON_HEALTH_ADDR: HealthAddr %q, %v; want 0.0.0.0:8081", cfg.HealthAddr, err)
	}
	_, err = loadForTest(t, append(minimal, "--health-addr", "127.0.0.1:99999")...)
	if err == nil || !strings.Contains(err.Error(), "--health-addr: ") || !strings.Contains(err.Error(), "between 0") {
		t.Fatalf("--health-addr 127.0.0.1:99999: %v, want an error naming --health-addr and the port rule", err)
	}
}
