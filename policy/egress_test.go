package policy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestEgressDefaultDeniesLinkLocal(t *testing.T) {
	t.Parallel()
	e, err := NewEgress(DefaultHTTPDeny)
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]string{
		"169.254.169.254":        "169.254.0.0/16",
		"::ffff:169.254.169.254": "169.254.0.0/16", // the same host, written as IPv6
		"fe80::1":                "fe80::/10",
		"fe80::1%eth0":           "fe80::/10", // a zone does not hide the range
	}
	for addr, rng := range denied {
		err := e.Allow(netip.MustParseAddr(addr))
		if !errors.Is(err, ErrEgressDenied) || !strings.Contains(err.Error(), rng) {
			t.Errorf("Allow(%s) = %v, want ErrEgressDenied naming %s", addr, err, rng)
		}
	}
	for _, addr := range []string{"127.0.0.1", "10.0.0.1", "::1", "2001:db8::1", "169.253.255.255", "169.255.0.0"} {
		if err := e.Allow(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("Allow(%s) = %v, want allowed", addr, err)
		}
	}
}

func TestEgressParsesRangesAndAddresses(t *testing.T) {
	t.Parallel()
	e, err := NewEgress([]string{" 10.1.2.3/8 ", "192.0.2.7", "", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.String(), "10.0.0.0/8,192.0.2.7/32,2001:db8::/32"; got != want {
		t.Fatalf("ranges %q, want %q (masked; a bare address is a host range)", got, want)
	}
	if err := e.Allow(netip.MustParseAddr("192.0.2.8")); err != nil {
		t.Fatalf("a bare address denied its neighbour: %v", err)
	}
	none, err := NewEgress(nil)
	if err != nil || none.Allow(netip.MustParseAddr("169.254.169.254")) != nil || (*Egress)(nil).Allow(netip.MustParseAddr("fe80::1")) != nil {
		t.Fatalf("an empty list must deny nothing (err %v)", err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "fe80::1%eth0", "1.2.3.4/x"} {
		if _, err := NewEgress([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("NewEgress(%q) = %v, want an error naming it", bad, err)
		}
	}
}
