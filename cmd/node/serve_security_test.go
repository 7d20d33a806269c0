package main

import (
	"strings"
	"testing"
)

var tlsFlags = []string{"--tls-cert", "/c.pem", "--tls-key", "/k.pem", "--tls-ca", "/ca.pem"}

func withArgs(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestServeRefusesAnOpenNonLoopbackAddress is the secure-by-default rule:
// off loopback a node needs TLS and client authentication, or --insecure;
// its HTTP port, which serves the JSON API, needs ACLs.
func TestServeRefusesAnOpenNonLoopbackAddress(t *testing.T) {
	t.Parallel()
	public := []string{"--addr", "192.0.2.10:7001"}
	refused := []struct {
		name string
		args []string
		want []string
	}{
		{"plaintext", withArgs(minimal, public), []string{"--addr 192.0.2.10:7001 is not loopback", "TLS (--tls-cert", "--insecure"}},
		{"plaintext with --acl", withArgs(minimal, public, []string{"--acl"}), []string{"not loopback", "TLS (--tls-cert"}},
		{"TLS without client auth", withArgs(minimal, public, tlsFlags), []string{"not loopback", "needs --acl or --tls-verify-clients"}},
		{"a name might be anything", withArgs(minimal, []string{"--addr", "node1.internal:7001"}), []string{"node1.internal:7001 is not loopback"}},
		{"JSON API open", withArgs(minimal, []string{"--http-addr", "192.0.2.10:8001"}),
			[]string{"--http-addr 192.0.2.10:8001 is not loopback", "the JSON API", "needs TLS (--tls-cert", "and --acl", "--insecure"}},
		{"JSON API behind client certificates only", withArgs(minimal, public, tlsFlags, []string{"--tls-verify-clients", "--http-addr", "0.0.0.0:8001"}),
			[]string{"--http-addr 0.0.0.0:8001 is not loopback", "needs --acl"}},
		// Tokens, the UI's sign-ins among them, would cross the network in
		// plaintext.
		{"JSON API behind ACLs without TLS", withArgs(minimal, []string{"--acl", "--http-addr", "0.0.0.0:8001"}),
			[]string{"--http-addr 0.0.0.0:8001 is not loopback", "needs TLS (--tls-cert", "not sent in plaintext", "--insecure"}},
		{"JSON API behind ACLs without TLS, IPv6", withArgs(minimal, []string{"--acl", "--http-addr", "[2001:db8::1]:8001"}),
			[]string{"--http-addr [2001:db8::1]:8001 is not loopback", "needs TLS"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadForTest(t, tc.args...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	accepted := []struct {
		name string
		args []string
	}{
		{"loopback plaintext", withArgs(minimal, []string{"--addr", "127.0.0.1:7001"})},
		{"localhost plaintext", withArgs(minimal, []string{"--addr", "localhost:7001"})},
		{"IPv6 loopback", withArgs(minimal, []string{"--addr", "[::1]:7001"})},
		{"TLS and verified clients", withArgs(minimal, public, tlsFlags, []string{"--tls-verify-clients"})},
		{"TLS and ACL", withArgs(minimal, public, tlsFlags, []string{"--acl"})},
		{"--insecure", withArgs(minimal, public, []string{"--insecure"})},
		{"JSON API behind ACLs", withArgs(minimal, public, tlsFlags, []string{"--acl", "--http-addr", "0.0.0.0:8001"})},
		{"JSON API --insecure", withArgs(minimal, []string{"--http-addr", "0.0.0.0:8001", "--insecure"})},
		{"JSON API with ACLs --insecure", withArgs(minimal, []string{"--http-addr", "0.0.0.0:8001", "--acl", "--insecure"})},
		{"JSON API behind ACLs on loopback", withArgs(minimal, []string{"--http-addr", "[::1]:8001", "--acl"})},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadForTest(t, tc.args...)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if cfg.hasTLS() != strings.Contains(strings.Join(tc.args, " "), "--tls-cert") {
				t.Errorf("hasTLS() = %v", cfg.hasTLS())
			}
		})
	}
}

func TestServeSecurityFlagsFromEnvironment(t *testing.T) {
	t.Setenv("RAFTCRON_ADDR", "192.0.2.10:7001")
	t.Setenv("RAFTCRON_TLS_CERT", "/c.pem")
	t.Setenv("RAFTCRON_TLS_KEY", "/k.pem")
	t.Setenv("RAFTCRON_TLS_CA", "/ca.pem")
	t.Setenv("RAFTCRON_TLS_VERIFY_CLIENTS", "true")
	t.Setenv("RAFTCRON_ACL", "1")
	cfg, err := loadForTest(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.hasTLS() || !cfg.TLSVerifyClients || !cfg.ACL || cfg.TLSCA != "/ca.pem" {
		t.Errorf("config %+v: want TLS, verified clients and ACL from the environment", cfg.securityConfig)
	}
}

func TestServeRejectsBadSecurityFlags(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "cert without key and CA", args: withArgs(minimal, []string{"--tls-cert", "/c.pem"}), want: "go together: missing --tls-key, --tls-ca"},
		{name: "CA alone", args: withArgs(minimal, []string{"--tls-ca", "/ca.pem"}), want: "missing --tls-cert, --tls-key"},
		{name: "verify clients without TLS", args: withArgs(minimal, []string{"--tls-verify-clients"}), want: "--tls-verify-clients needs TLS"},
		{name: "debug addr off loopback", args: withArgs(minimal, []string{"--debug-addr", "192.0.2.10:6060"}), want: "--debug-addr 192.0.2.10:6060 is not loopback"},
		{name: "debug addr malformed", args: withArgs(minimal, []string{"--debug-addr", "6060"}), want: "--debug-addr:"},
		{name: "env bool typo", env: map[string]string{"RAFTCRON_INSECURE": "yes please"}, args: minimal, want: "--insecure:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := loadForTest(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := loadForTest(t, withArgs(minimal, []string{"--debug-addr", "192.0.2.10:6060", "--insecure"})...); err != nil {
		t.Errorf("--debug-addr off loopback with --insecure: %v", err)
	}
}

// TestServeHTTPHostFlag: --http-host lists names; a port, scheme or
// wildcard is refused naming the flag.
func TestServeHTTPHostFlag(t *testing.T) {
	t.Parallel()
	cfg, err := loadForTest(t, withArgs(minimal, []string{"--http-host", "raftcron.example, N1.Example."})...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.HTTPHosts, ",") != "raftcron.example,N1.Example." {
		t.Fatalf("HTTPHosts = %q", cfg.HTTPHosts)
	}
	for _, bad := range []string{"raftcron.example:8001", "https://raftcron.example", "*.example"} {
		_, err := loadForTest(t, withArgs(minimal, []string{"--http-host", bad})...)
		if err == nil || !strings.Contains(err.Error(), "--http-host: ") || !strings.Contains(err.Error(), bad) {
			t.Errorf("--http-host %s: %v, want a refusal naming the flag and the value", bad, err)
		}
	}
}
