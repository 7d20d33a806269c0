package cluster

import (
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Config describes one node. Zero timings mean Raft's defaults.
type Config struct {
	// ID is the node's permanent Raft server ID (--id).
	ID string
	// Addr is the advertised host:port of the node's one port (--addr):
	// peers dial it for Raft and for forwarded requests. Empty means the
	// mux's bound address.
	Addr string
	// DataDir holds raft.db and the snapshots (--data-dir).
	DataDir string
	// Peers is the bootstrap set (--peers); it must contain ID. Used only
	// when DataDir holds no Raft state yet.
	Peers []Peer
	// Join lists existing nodes to join through (--join). Used only when
	// DataDir holds no Raft state yet.
	Join []string

	HeartbeatTimeout   time.Duration // --raft-heartbeat
	ElectionTimeout    time.Duration // --raft-election
	LeaderLeaseTimeout time.Duration // --raft-lease

	// FSM receives every committed command; its Apply returns a
	// *pb.CommandResult.
	FSM    raft.FSM
	Logger *slog.Logger
	// OnLeadershipChange is called on every change of this node's
	// leadership, from a goroutine Raft waits on: it must return quickly
	// and must not call into Raft or this Node.
	OnLeadershipChange func(isLeader bool)
	// NoSync skips fsync. Unit tests only: without fsync a crash loses
	// acknowledged writes.
	NoSync bool
	// DiskStallTimeout is how long a Raft disk write may run before the
	// node counts its disk as stalled (--disk-stall-timeout; see
	// diskwatch.go). Zero means DefaultDiskStallTimeout.
	DiskStallTimeout time.Duration

	// tune adjusts the Raft configuration after defaults (tests only).
	tune func(*raft.Config)
	// beforeDiskWrite runs inside every Raft disk write (tests only: it
	// can hold the write to fake a stalled disk).
	beforeDiskWrite func()
}

const (
	minTimeout   = 5 * time.Millisecond // raft's floor
	trailingLogs = 10240
)

// check validates cfg and fills defaults derived from the mux.
func (cfg Config) check(mux *Mux) (Config, error) {
	if mux == nil {
		return cfg, configErrorf("cluster: nil mux")
	}
	if err := validateID(cfg.ID); err != nil {
		return cfg, configErrorf("--id: %v", err)
	}
	if cfg.DataDir == "" {
		return cfg, configErrorf("--data-dir must not be empty")
	}
	if cfg.FSM == nil {
		return cfg, configErrorf("cluster: Config.FSM must not be nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Addr == "" {
		cfg.Addr = mux.Addr().String()
	}
	if err := checkAdvertise(cfg.Addr); err != nil {
		return cfg, err
	}
	if err := cfg.checkPeers(); err != nil {
		return cfg, err
	}
	if err := cfg.checkJoin(); err != nil {
		return cfg, err
	}
	switch d := cfg.DiskStallTimeout; {
	case d == 0:
		cfg.DiskStallTimeout = DefaultDiskStallTimeout
	case d < minDiskStallTimeout:
		return cfg, configErrorf("--disk-stall-timeout %s: must be at least %s", d, minDiskStallTimeout)
	}
	return cfg, nil
}

// checkAdvertise refuses addresses peers could not dial back.
func checkAdvertise(addr string) error {
	if err := validateAddr(addr); err != nil {
		return configErrorf("--addr: %v", err)
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return configErrorf("--addr %s: peers must be able to dial it: use a reachable host, not %s", addr, host)
	}
	return nil
}

func (cfg Config) checkPeers() error {
	if len(cfg.Peers) == 0 {
		return nil
	}
	if len(cfg.Join) > 0 {
		return configErrorf("--peers and --join are mutually exclusive: bootstrap a new cluster with --peers, or join an existing one with --join")
	}
	for _, p := range cfg.Peers {
		if err := validateID(p.ID); err != nil {
			return configErrorf("--peers: %v", err)
		}
		if err := validateAddr(p.Addr); err != nil {
			return configErrorf("--peers: %v", err)
		}
	}
	if err := checkUniquePeers(cfg.Peers); err != nil {
		return err
	}
	for _, p := range cfg.Peers {
		if p.ID != cfg.ID {
			continue
		}
		if p.Addr != cfg.Addr {
			return configErrorf("--peers gives %s the address %s but --addr is %s: they must match", p.ID, p.Addr, cfg.Addr)
		}
		return nil
	}
	return configErrorf("--peers must contain --id %s", cfg.ID)
}

func (cfg Config) checkJoin() error {
	others := 0
	for _, a := range cfg.Join {
		if err := validateAddr(a); err != nil {
			return configErrorf("--join: %v", err)
		}
		if a != cfg.Addr {
			others++
		}
	}
	if len(cfg.Join) > 0 && others == 0 {
		return configErrorf("--join must name at least one node other than --addr %s", cfg.Addr)
	}
	return nil
}

// raftConfig builds Raft's configuration. An unset timing is clamped to the
// ones that are set, so "--raft-heartbeat 200ms" alone is valid; values set
// explicitly and in conflict are refused.
func (cfg Config) raftConfig() (*raft.Config, error) {
	rc := raft.DefaultConfig()
	for _, t := range []struct {
		flag string
		v    time.Duration
		dst  *time.Duration
	}{
		{"--raft-heartbeat", cfg.HeartbeatTimeout, &rc.HeartbeatTimeout},
		{"--raft-election", cfg.ElectionTimeout, &rc.ElectionTimeout},
		{"--raft-lease", cfg.LeaderLeaseTimeout, &rc.LeaderLeaseTimeout},
	} {
		switch {
		case t.v < 0:
			return nil, configErrorf("%s %s: must not be negative", t.flag, t.v)
		case t.v > 0 && t.v < minTimeout:
			return nil, configErrorf("%s %s: must be at least %s", t.flag, t.v, minTimeout)
		case t.v > 0:
			*t.dst = t.v
		}
	}
	if cfg.ElectionTimeout == 0 {
		rc.ElectionTimeout = max(rc.ElectionTimeout, rc.HeartbeatTimeout)
	}
	if cfg.LeaderLeaseTimeout == 0 {
		// Below the heartbeat timeout, so that a crashed leader can be
		// replaced before it (see crash.go).
		rc.LeaderLeaseTimeout = max(min(rc.LeaderLeaseTimeout, rc.HeartbeatTimeout/2), minTimeout)
	}
	if rc.ElectionTimeout < rc.HeartbeatTimeout {
		return nil, configErrorf("--raft-election %s must be at least --raft-heartbeat %s", rc.ElectionTimeout, rc.HeartbeatTimeout)
	}
	if rc.LeaderLeaseTimeout > rc.HeartbeatTimeout {
		return nil, configErrorf("--raft-lease %s must not exceed --raft-heartbeat %s", rc.LeaderLeaseTimeout, rc.HeartbeatTimeout)
	}
	rc.LocalID = raft.ServerID(cfg.ID)
	// A removed node must never carry on as a one-node cluster.
	rc.ShutdownOnRemove = true
	// Enough history for a lagging follower to catch up from the log
	// instead of looping on snapshot installs.
	rc.TrailingLogs = trailingLogs
	rc.Logger = newHCLog(cfg.Logger.With("node", cfg.ID), "raft")
	if cfg.tune != nil {
		cfg.tune(rc)
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, configErrorf("raft configuration: %v", err)
	}
	return rc, nil
}
