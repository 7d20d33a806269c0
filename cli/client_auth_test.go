package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientAuthRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		auth Auth
		addr string
		want string
	}{
		{"cert without key", Auth{CACert: "/ca", ClientCert: "/c"}, "127.0.0.1:7001", "--client-cert and --client-key go together"},
		{"cert without CA", Auth{ClientCert: "/c", ClientKey: "/k"}, "127.0.0.1:7001", "--client-cert needs --ca-cert"},
		{"token in plaintext off loopback", Auth{Token: "s3cret"}, "192.0.2.10:7001", "ACL token without --ca-cert"},
	}
	for _, tc := range cases {
		if err := tc.auth.check(tc.addr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, ok := range []struct {
		auth Auth
		addr string
	}{
		{Auth{Token: "s3cret"}, "127.0.0.1:7001"},
		{Auth{Token: "s3cret", CACert: "/ca"}, "192.0.2.10:7001"},
		{Auth{CACert: "/ca", ClientCert: "/c", ClientKey: "/k"}, "192.0.2.10:7001"},
	} {
		if err := ok.auth.check(ok.addr); err != nil {
			t.Errorf("%+v to %s: %v", ok.auth, ok.addr, err)
		}
	}
}

func TestTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := Auth{TokenFile: write("ok", "  s3cret\n")}
	if err := a.loadToken(); err != nil || a.Token != "s3cret" {
		t.Fatalf("loadToken = %v, token %q; want s3cret", err, a.Token)
	}
	both := Auth{Token: "s3cret", TokenFile: write("both", "s3cret")}
	var u *usageError
	if err := both.loadToken(); !errors.As(err, &u) || !strings.Contains(err.Error(), "--token and --token-file") {
		t.Errorf("--token with --token-file: %v, want a usage error naming both", err)
	}
	for name, body := range map[string]string{"empty": " \n", "two lines": "a\nb\n", "too big": strings.Repeat("x", maxTokenFile+1)} {
		a := Auth{TokenFile: write(name, body)}
		if err := a.loadToken(); err == nil || !strings.Contains(err.Error(), "--token-file") {
			t.Errorf("%s file: %v, want an error naming --token-file", name, err)
		}
	}
	missing := Auth{TokenFile: filepath.Join(dir, "nope")}
	if err := missing.loadToken(); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("missing file: %v, want an error naming --token-file", err)
	}
}
