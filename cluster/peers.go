package cluster

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// Peer is one member of the bootstrap set: its Raft server ID and its
// advertised host:port (Raft and gRPC share it).
type Peer struct{ ID, Addr string }

// ParsePeers parses a bootstrap set written "n1=127.0.0.1:7001,n2=127.0.0.1:7002".
// An empty string means no peers. IDs and addresses must be valid and
// unique; errors are *ConfigError naming the Peers field.
func ParsePeers(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []Peer
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, invalidFieldf(FieldPeers, "entry %d is empty: want ID=HOST:PORT", i+1)
		}
		id, addr, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, invalidFieldf(FieldPeers, "entry %q: missing '=': want ID=HOST:PORT", entry)
		}
		peers = append(peers, Peer{ID: strings.TrimSpace(id), Addr: strings.TrimSpace(addr)})
	}
	if err := checkPeerList(peers); err != nil {
		return nil, err
	}
	return peers, nil
}

// checkPeerList checks each peer and that no ID or address repeats.
func checkPeerList(peers []Peer) error {
	ids := make(map[string]bool, len(peers))
	addrs := make(map[string]string, len(peers))
	for _, p := range peers {
		if err := ValidateID(p.ID); err != nil {
			return invalidFieldf(FieldPeers, "entry %s=%s: %v", p.ID, p.Addr, err)
		}
		if err := ValidateAddr(p.Addr); err != nil {
			return invalidFieldf(FieldPeers, "entry %s=%s: %v", p.ID, p.Addr, err)
		}
		if ids[p.ID] {
			return invalidFieldf(FieldPeers, "duplicate ID %q", p.ID)
		}
		ids[p.ID] = true
		if other, dup := addrs[p.Addr]; dup {
			return invalidFieldf(FieldPeers, "duplicate address %s (IDs %q and %q)", p.Addr, other, p.ID)
		}
		addrs[p.Addr] = p.ID
	}
	return nil
}

// idPattern is the one rule for node IDs, the same as for job names: IDs
// appear in flags, paths, metric labels and the Raft configuration forever,
// so they keep to a small, unambiguous alphabet ('=' and ',' would break
// a peer list).
const idPattern = `[a-z0-9][a-z0-9._-]{0,62}`

var idRegexp = regexp.MustCompile(`^` + idPattern + `$`)

// ValidateID checks a node ID against the one rule for node IDs.
func ValidateID(id string) error {
	if id == "" {
		return errors.New("required")
	}
	if !idRegexp.MatchString(id) {
		return fmt.Errorf("%q must match %s", id, idPattern)
	}
	return nil
}

// ValidateAddr checks an address other nodes will dial: HOST:PORT with a
// non-empty host and a port in 1..65535.
func ValidateAddr(addr string) error {
	if addr == "" {
		return errors.New("required (HOST:PORT)")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT", addr)
	}
	if host == "" {
		return fmt.Errorf("%q needs a host: the other nodes dial it", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q needs a port between 1 and 65535", addr)
	}
	return nil
}
