package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// TestServeTLSOpsPortIsHTTPS: with the TLS flags the ops port is HTTPS
// with the node's certificate (the cluster's readiness wait reads it so),
// the JSON API answers a bearer token over it, a plain-HTTP request gets
// no status, and --health-addr serves the probes in plain HTTP.
func TestServeTLSOpsPortIsHTTPS(t *testing.T) {
	files := newTLSFiles(t, "n1")
	healthAddr := clustertest.FreeAddrs(t, 1)[0]
	// --acl by hand: the test bootstraps the ACLs itself.
	c := clustertest.Start(t, localcluster.Options{Nodes: 1, TLS: true, TLSDir: files.dir,
		Args: append(slices.Clone(testRaft), "--acl", "--health-addr", healthAddr)})
	n1 := c.Nodes()[0]
	plain := &http.Client{Timeout: clustertest.CLITimeout}

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
		client := c.OpsClient()
		for secret, want := range map[string]int{"": http.StatusUnauthorized, boot.Secret: http.StatusOK} {
			req, err := http.NewRequest(http.MethodGet, n1.OpsURL("/v1/jobs"), nil)
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
