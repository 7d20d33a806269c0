package policy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ErrEgressDenied is wrapped by every refusal of Egress.Allow.
var ErrEgressDenied = errors.New("egress denied")

// DefaultHTTPDeny are the ranges webhooks may not reach unless the operator
// says otherwise (--http-deny): where cloud metadata services hand out the
// machine's credentials. Link-local (169.254.169.254 on AWS, GCP, Azure,
// Oracle and most others; fe80::/10), AWS's IPv6 endpoint and Alibaba
// Cloud's.
var DefaultHTTPDeny = []string{"169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32"}

// HostHTTPDeny are the ranges that reach the node's own host whatever its
// interfaces: loopback, where its pprof port, sidecars and local daemons
// listen, and the unspecified addresses, which a connect(2) takes for
// loopback. ForNode denies them on a node that is not on loopback; a node on
// loopback is a test or a demo, whose downstreams listen there too.
var HostHTTPDeny = []string{"127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128"}

// Where a denied range comes from, for the refusal's words.
const (
	fromHTTPDeny = "--http-deny"
	fromHost     = "this host's own addresses, denied on a node off loopback"
)

// Egress decides which addresses dispatched requests may dial. A request
// is refused if it goes to one of the node's own ports at any address of
// this host (nothing reopens those), else allowed if an allowed range holds
// its address (--http-allow beats every deny range), else refused if a
// denied range holds it. The zero Egress, and a nil one, deny nothing.
type Egress struct {
	deny  []deniedRange
	allow []netip.Prefix
	// ports are the node's own; local lists this host's addresses, for a
	// dial to one of them.
	ports []uint16
	local func() ([]net.Addr, error)
}

type deniedRange struct {
	prefix netip.Prefix
	from   string
}

// NewEgress parses the denied CIDR ranges ("169.254.0.0/16", "fe80::/10");
// a bare address stands for itself alone.
func NewEgress(cidrs []string) (*Egress, error) {
	prefixes, err := parseRanges(cidrs)
	if err != nil {
		return nil, err
	}
	e := &Egress{}
	for _, p := range prefixes {
		e.deny = append(e.deny, deniedRange{p, fromHTTPDeny})
	}
	return e, nil
}

// WithAllow returns a copy of e that allows the given CIDR ranges whatever
// range denies them (--http-allow), but not the node's own ports.
func (e *Egress) WithAllow(cidrs []string) (*Egress, error) {
	prefixes, err := parseRanges(cidrs)
	if err != nil {
		return nil, err
	}
	c := e.clone()
	c.allow = append(c.allow, prefixes...)
	return c, nil
}

// Self is what the egress check knows of the node it guards.
type Self struct {
	// Loopback: the node's own address (--addr) is loopback.
	Loopback bool
	// Ports the node listens on, at whatever address (gRPC, HTTP, health,
	// debug); 0 is ignored.
	Ports []uint16
}

// ForNode returns a copy of e that refuses the node's own ports at every
// address of this host, and HostHTTPDeny unless the node is on loopback.
func (e *Egress) ForNode(s Self) *Egress {
	c := e.clone()
	if !s.Loopback {
		for _, r := range HostHTTPDeny {
			c.deny = append(c.deny, deniedRange{netip.MustParsePrefix(r), fromHost})
		}
	}
	for _, p := range s.Ports {
		if p != 0 && !slices.Contains(c.ports, p) {
			c.ports = append(c.ports, p)
		}
	}
	slices.Sort(c.ports)
	if c.local == nil {
		c.local = net.InterfaceAddrs
	}
	return c
}

func (e *Egress) clone() *Egress {
	if e == nil {
		return &Egress{}
	}
	return &Egress{deny: slices.Clone(e.deny), allow: slices.Clone(e.allow), ports: slices.Clone(e.ports), local: e.local}
}

func parseRanges(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		p, err := parseRange(c)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parseRange(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range like 169.254.0.0/16 or an IP address", s)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range like 169.254.0.0/16", s)
	}
	return p.Masked(), nil
}

// Allow returns nil if addr may be dialled, and otherwise an error wrapping
// ErrEgressDenied that says why. An IPv4 address written in IPv6 form
// (::ffff:127.0.0.1) and an address with a zone (fe80::1%eth0) are judged
// as the address they reach.
func (e *Egress) Allow(addr netip.AddrPort) error {
	if e == nil {
		return nil
	}
	a := addr.Addr().Unmap().WithZone("")
	if err := e.checkOwnPort(a, addr.Port()); err != nil {
		return err
	}
	for _, p := range e.allow {
		if p.Contains(a) {
			return nil
		}
	}
	for _, r := range e.deny {
		if r.prefix.Contains(a) {
			return fmt.Errorf("%w: %s is in the denied range %s (%s)", ErrEgressDenied, a, r.prefix, r.from)
		}
	}
	return nil
}

// checkOwnPort refuses a dial to one of the node's ports at an address of
// this host: loopback and the unspecified addresses always are, and a
// listener bound to 0.0.0.0 or :: answers on every interface's too.
func (e *Egress) checkOwnPort(a netip.Addr, port uint16) error {
	if !slices.Contains(e.ports, port) {
		return nil
	}
	denied := func(note string) error {
		return fmt.Errorf("%w: %s is this node's own port%s (--http-allow does not reopen it)", ErrEgressDenied, netip.AddrPortFrom(a, port), note)
	}
	if a.IsLoopback() || a.IsUnspecified() {
		return denied("")
	}
	addrs, err := e.local()
	if err != nil {
		// Which addresses are this host's is unknown: refuse rather than
		// risk the node's own port.
		return denied(" as far as can be told: this host's addresses are unknown: " + err.Error())
	}
	for _, la := range addrs {
		if ipnet, ok := la.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipnet.IP); ok && ip.Unmap() == a {
				return denied("")
			}
		}
	}
	return nil
}

// String lists the denied ranges, comma-separated.
func (e *Egress) String() string {
	if e == nil {
		return ""
	}
	return commaList(e.deny, func(r deniedRange) string { return r.prefix.String() })
}

// Allowed lists the allowed ranges, comma-separated.
func (e *Egress) Allowed() string {
	if e == nil {
		return ""
	}
	return commaList(e.allow, netip.Prefix.String)
}

// OwnPorts lists the node's own ports, comma-separated.
func (e *Egress) OwnPorts() string {
	if e == nil {
		return ""
	}
	return commaList(e.ports, func(p uint16) string { return strconv.Itoa(int(p)) })
}

func commaList[T any](items []T, format func(T) string) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = format(it)
	}
	return strings.Join(s, ",")
}
