package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrEgressDenied is wrapped by every refusal of Egress.Allow.
var ErrEgressDenied = errors.New("egress denied")

// DefaultHTTPDeny are the ranges webhooks may not reach unless the operator
// says otherwise: link-local, where cloud metadata services live
// (169.254.169.254 hands out the machine's credentials).
var DefaultHTTPDeny = []string{"169.254.0.0/16", "fe80::/10"}

// Egress is a list of address ranges that dispatched requests must not
// reach. The zero Egress, and a nil one, deny nothing.
type Egress struct {
	deny []netip.Prefix
}

// NewEgress parses CIDR ranges ("169.254.0.0/16", "fe80::/10"); a bare
// address stands for itself alone.
func NewEgress(cidrs []string) (*Egress, error) {
	e := &Egress{}
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		p, err := parseRange(c)
		if err != nil {
			return nil, err
		}
		e.deny = append(e.deny, p)
	}
	return e, nil
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
// ErrEgressDenied that names the range. An IPv4 address written in IPv6
// form (::ffff:169.254.169.254) and an address with a zone (fe80::1%eth0)
// are judged as the address they reach.
func (e *Egress) Allow(addr netip.Addr) error {
	if e == nil {
		return nil
	}
	a := addr.Unmap().WithZone("")
	for _, p := range e.deny {
		if p.Contains(a) {
			return fmt.Errorf("%w: %s is in the denied range %s (--http-deny)", ErrEgressDenied, a, p)
		}
	}
	return nil
}

// String lists the denied ranges, comma-separated.
func (e *Egress) String() string {
	if e == nil {
		return ""
	}
	s := make([]string, len(e.deny))
	for i, p := range e.deny {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
