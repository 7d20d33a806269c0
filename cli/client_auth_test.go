package cli

import (
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
		{"token in plaintext off loopback", Auth{Token: "s3cret"}, "192.0.2.10:7001", "--token without --ca-cert"},
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
