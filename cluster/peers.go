package cluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Peer is one member of the bootstrap set: its Raft server ID and its
// advertised host:port (Raft and gRPC share it).
type Peer struct{ ID, Addr string }

const maxIDLen = 64

// ParsePeers parses the --peers flag, "n1=127.0.0.1:7001,n2=127.0.0.1:7002".
// An empty string means no peers. IDs and addresses must be unique.
func ParsePeers(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []Peer
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, configErrorf("--peers entry %d is empty: want ID=HOST:PORT", i+1)
		}
		id, addr, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, configErrorf("--peers entry %q: missing '=': want ID=HOST:PORT", entry)
		}
		p := Peer{ID: strings.TrimSpace(id), Addr: strings.TrimSpace(addr)}
		if err := validateID(p.ID); err != nil {
			return nil, configErrorf("--peers entry %q: %v", entry, err)
		}
		if err := validateAddr(p.Addr); err != nil {
			return nil, configErrorf("--peers entry %q: %v", entry, err)
		}
		peers = append(peers, p)
	}
	if err := checkUniquePeers(peers); err != nil {
		return nil, err
	}
	return peers, nil
}

func checkUniquePeers(peers []Peer) error {
	ids := make(map[string]bool, len(peers))
	addrs := make(map[string]string, len(peers))
	for _, p := range peers {
		if ids[p.ID] {
			return configErrorf("--peers: duplicate ID %q", p.ID)
		}
		ids[p.ID] = true
		if other, dup := addrs[p.Addr]; dup {
			return configErrorf("--peers: duplicate address %s (IDs %q and %q)", p.Addr, other, p.ID)
		}
		addrs[p.Addr] = p.ID
	}
	return nil
}

// validateID: IDs appear in flags, logs and the Raft configuration forever,
// so keep them to a small, unambiguous alphabet ('=' and ',' would break --peers).
func validateID(id string) error {
	if id == "" {
		return errors.New("empty ID")
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("ID %q is longer than %d characters", id, maxIDLen)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '-' || r == '_' || r == '.'
		if !ok {
			return fmt.Errorf("ID %q may contain only letters, digits, '-', '_' and '.'", id)
		}
	}
	return nil
}

// validateAddr checks an address other nodes will dial: HOST:PORT with a
// non-empty host and a port in 1..65535.
func validateAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: want HOST:PORT", addr)
	}
	if host == "" {
		return fmt.Errorf("address %q: empty host", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("address %q: port must be a number in 1..65535", addr)
	}
	return nil
}
