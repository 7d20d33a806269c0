package policy

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func mustEgress(t *testing.T, cidrs ...string) *Egress {
	t.Helper()
	e, err := NewEgress(cidrs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// at is addr on port 443, a port no test node listens on.
func at(addr string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(addr), 443) }

func wantDenied(t *testing.T, e *Egress, ap netip.AddrPort, naming string) {
	t.Helper()
	err := e.Allow(ap)
	if !errors.Is(err, ErrEgressDenied) || !strings.Contains(err.Error(), naming) {
		t.Errorf("Allow(%s) = %v, want ErrEgressDenied naming %q", ap, err, naming)
	}
}

func wantAllowed(t *testing.T, e *Egress, ap netip.AddrPort) {
	t.Helper()
	if err := e.Allow(ap); err != nil {
		t.Errorf("Allow(%s) = %v, want allowed", ap, err)
	}
}

func TestEgressDefaultDeniesMetadataServices(t *testing.T) {
	t.Parallel()
	e := mustEgress(t, DefaultHTTPDeny...)
	for addr, rng := range map[string]string{
		"169.254.169.254":         "169.254.0.0/16",
		"::ffff:169.254.169.254":  "169.254.0.0/16", // the same host, written as IPv6
		"fe80::1":                 "fe80::/10",
		"fe80::1%eth0":            "fe80::/10", // a zone does not hide the range
		"fd00:ec2::254":           "fd00:ec2::254/128",
		"100.100.100.200":         "100.100.100.200/32",
		"::ffff:100.100.100.200":  "100.100.100.200/32",
		"::ffff:a9fe:a9fe":        "169.254.0.0/16", // 169.254.169.254 in hex
		"fd00:ec2:0:0:0:0:0:0254": "fd00:ec2::254/128",
	} {
		wantDenied(t, e, at(addr), rng)
	}
	for _, addr := range []string{"127.0.0.1", "10.0.0.1", "::1", "2001:db8::1", "169.253.255.255", "169.255.0.0", "fd00:ec2::253", "100.100.100.201"} {
		wantAllowed(t, e, at(addr))
	}
}

func TestEgressParsesRangesAndAddresses(t *testing.T) {
	t.Parallel()
	e := mustEgress(t, " 10.1.2.3/8 ", "192.0.2.7", "", "2001:db8::/32")
	if got, want := e.String(), "10.0.0.0/8,192.0.2.7/32,2001:db8::/32"; got != want {
		t.Fatalf("ranges %q, want %q (masked; a bare address is a host range)", got, want)
	}
	wantAllowed(t, e, at("192.0.2.8")) // a bare address denies no neighbour
	none := mustEgress(t)
	wantAllowed(t, none, at("169.254.169.254"))
	wantAllowed(t, (*Egress)(nil), at("fe80::1"))
	for _, bad := range []string{"10.0.0.0/33", "example.com", "fe80::1%eth0", "1.2.3.4/x"} {
		if _, err := NewEgress([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("NewEgress(%q) = %v, want an error naming it", bad, err)
		}
		if _, err := e.WithAllow([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("WithAllow(%q) = %v, want an error naming it", bad, err)
		}
	}
}

// TestEgressOffLoopbackDeniesThisHost: a node whose --addr is not loopback
// refuses every spelling of this host — loopback, the unspecified
// addresses a connect(2) takes for loopback, their IPv4-mapped forms.
func TestEgressOffLoopbackDeniesThisHost(t *testing.T) {
	t.Parallel()
	e := mustEgress(t, DefaultHTTPDeny...).ForNode(Self{Loopback: false})
	for addr, rng := range map[string]string{
		"127.0.0.1":        "127.0.0.0/8",
		"127.1.2.3":        "127.0.0.0/8",
		"::ffff:127.0.0.1": "127.0.0.0/8",
		"::1":              "::1/128",
		"0.0.0.0":          "0.0.0.0/8",
		"::ffff:0.0.0.0":   "0.0.0.0/8",
		"::":               "::/128",
		"169.254.169.254":  "169.254.0.0/16",
		"fd00:ec2::254":    "fd00:ec2::254/128",
		"100.100.100.200":  "100.100.100.200/32",
	} {
		wantDenied(t, e, at(addr), rng)
	}
	wantDenied(t, e, at("::ffff:127.0.0.1"), "this host's own addresses")
	for _, addr := range []string{"10.0.0.1", "192.0.2.10", "2001:db8::1", "::2"} {
		wantAllowed(t, e, at(addr))
	}
	// A node on loopback is a test or a demo: its downstreams listen there.
	lo := mustEgress(t, DefaultHTTPDeny...).ForNode(Self{Loopback: true})
	for _, addr := range []string{"127.0.0.1", "::ffff:127.0.0.1", "::1", "0.0.0.0"} {
		wantAllowed(t, lo, at(addr))
	}
	wantDenied(t, lo, at("169.254.169.254"), "169.254.0.0/16")
	// ForNode copies: the Egress it was given is unchanged.
	if base := mustEgress(t, "10.0.0.0/8"); base.ForNode(Self{}).String() == base.String() || base.String() != "10.0.0.0/8" {
		t.Errorf("ForNode changed its receiver or added nothing: %q", base.String())
	}
}

// TestEgressRefusesTheNodesOwnPorts: at every address of this host, in
// every form, whether the node is on loopback or not, and whatever
// --http-allow says; other ports of the same addresses stay as the ranges
// say.
func TestEgressRefusesTheNodesOwnPorts(t *testing.T) {
	t.Parallel()
	iface := netip.MustParseAddr("192.0.2.2")
	local := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: iface.AsSlice(), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("2001:db8::2"), Mask: net.CIDRMask(64, 128)}}, nil
	}
	for _, loopback := range []bool{true, false} {
		e, err := mustEgress(t, DefaultHTTPDeny...).WithAllow([]string{"0.0.0.0/0", "::/0"})
		if err != nil {
			t.Fatal(err)
		}
		e = e.ForNode(Self{Loopback: loopback, Ports: []uint16{7001, 8001, 8081, 6060, 0}})
		e.local = local
		for _, port := range []uint16{7001, 8001, 8081, 6060} {
			for _, addr := range []string{"127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::", "::ffff:0.0.0.0",
				"192.0.2.2", "::ffff:192.0.2.2", "2001:db8::2"} {
				wantDenied(t, e, netip.AddrPortFrom(netip.MustParseAddr(addr), port), "this node's own port")
			}
			// Another host's port of the same number is no concern.
			wantAllowed(t, e, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.3"), port))
		}
		wantAllowed(t, e, netip.AddrPortFrom(iface, 8002))
		wantAllowed(t, e, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 8002)) // reopened by the allow
		if got := e.OwnPorts(); got != "6060,7001,8001,8081" {
			t.Errorf("OwnPorts() = %q", got)
		}
	}
	// Not knowing this host's addresses refuses the node's ports anywhere.
	e := mustEgress(t).ForNode(Self{Loopback: true, Ports: []uint16{8001}})
	e.local = func() ([]net.Addr, error) { return nil, errors.New("no netlink") }
	wantDenied(t, e, netip.AddrPortFrom(netip.MustParseAddr("198.51.100.7"), 8001), "no netlink")
	wantAllowed(t, e, netip.AddrPortFrom(netip.MustParseAddr("198.51.100.7"), 8002))
}

// TestEgressAllowBeatsDeny: --http-allow reopens part of any deny range,
// the defaults, --http-deny's and this host's.
func TestEgressAllowBeatsDeny(t *testing.T) {
	t.Parallel()
	e, err := mustEgress(t, append([]string{"10.0.0.0/8"}, DefaultHTTPDeny...)...).
		WithAllow([]string{"10.1.0.0/16", "127.0.0.1", "169.254.170.2/32"})
	if err != nil {
		t.Fatal(err)
	}
	e = e.ForNode(Self{Loopback: false})
	for _, addr := range []string{"10.1.2.3", "127.0.0.1", "::ffff:127.0.0.1", "169.254.170.2"} {
		wantAllowed(t, e, at(addr))
	}
	wantDenied(t, e, at("10.2.0.1"), "10.0.0.0/8 (--http-deny)")
	wantDenied(t, e, at("127.0.0.2"), "127.0.0.0/8")
	wantDenied(t, e, at("169.254.169.254"), "169.254.0.0/16")
	if got := e.Allowed(); got != "10.1.0.0/16,127.0.0.1/32,169.254.170.2/32" {
		t.Errorf("Allowed() = %q", got)
	}
}
