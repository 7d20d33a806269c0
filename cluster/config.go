package cluster

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Names of the Config fields that ConfigError.Field reports. They are the
// field names themselves: whoever built the Config from flags or files
// knows where each came from (cmd/node maps them to its flags).
const (
	FieldID                 = "ID"
	FieldAddr               = "Addr"
	FieldDataDir            = "DataDir"
	FieldPeers              = "Peers"
	FieldJoin               = "Join"
	FieldHeartbeatTimeout   = "HeartbeatTimeout"
	FieldElectionTimeout    = "ElectionTimeout"
	FieldLeaderLeaseTimeout = "LeaderLeaseTimeout"
	FieldDiskStallTimeout   = "DiskStallTimeout"
)

// Config describes one node. Zero timings mean Raft's defaults.
type Config struct {
	// ID is the node's permanent Raft server ID.
	ID string
	// Addr is the advertised host:port of the node's one port: peers dial
	// it for Raft and for forwarded requests. Empty means the mux's bound
	// address.
	Addr string
	// DataDir holds raft.db and the snapshots.
	DataDir string
	// Peers is the bootstrap set; it must contain ID. Used only when
	// DataDir holds no Raft state yet.
	Peers []Peer
	// Join lists existing nodes to join through. Used only when DataDir
	// holds no Raft state yet.
	Join []string

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration

	// FSM receives every committed command; its Apply returns a
	// *pb.CommandResult.
	FSM    raft.FSM
	Logger *slog.Logger
	// OnLeadershipChange is called on every change of this node's
	// leadership, from a goroutine Raft waits on: it must return quickly
	// and must not call into Raft or this Node. Raft runs only from Start
	// on, so whatever the callback uses may be built between New and Start.
	OnLeadershipChange func(isLeader bool)
	// Now is the leader's clock. The leader stamps every command it
	// proposes for a client (Apply, ApplyBulk, and what followers forward)
	// with it, so that no other node's clock ever reaches the FSM. Nil
	// means time.Now.
	Now func() time.Time
	// CommandVersion is the highest command version FSM applies
	// (fsm.CommandVersion); the node advertises it to the leader and on
	// /status. 0 means 1.
	CommandVersion uint32
	// VersionOf is the command version that introduced a command's kind
	// (fsm.VersionOf). As leader, the node proposes a command only when
	// every voter advertises at least that version. Nil means every command
	// is of version 1.
	VersionOf func(*pb.Command) uint32
	// ClusterVersion reads the FSM's active cluster version
	// ((*fsm.FSM).ClusterVersion) and RaiseClusterVersion makes the command
	// that raises it (fsm.SetClusterVersion). With both, the leader raises
	// the version to CommandVersion once every voter applies it, and
	// Status reports it (clusterversion.go). Nil: neither.
	ClusterVersion      func() uint32
	RaiseClusterVersion func(to uint32) *pb.Command
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
	// commitTimeout is how long a leader with no new entry waits before it
	// tells the followers of its latest commits (Raft's default: 50 ms;
	// Raft draws it between this and twice this). A follower learns a
	// commit only from an AppendEntries, and applies it then. A wave of
	// fires commits in a slot's first milliseconds; at 50 ms, or at 250,
	// its applies, a core per follower for tens of milliseconds, would land
	// on the wave's deliveries (a 10,000 burst's last ones come 350 ms after
	// the slot). At 500 ms they come with the wave's first outcome entry,
	// which the scheduler holds until the deliveries are over, and the
	// outcomes' own applies with the scheduler's AnnounceCommit after them.
	// Reads do not wait for it: a follower behind the read index has the
	// leader announce its commit index at once.
	commitTimeout = 500 * time.Millisecond
)

// Validate checks every rule of the fields a caller sets from outside (ID,
// Addr, DataDir, Peers, Join, the timings and DiskStallTimeout) and reports each broken one as
// a *ConfigError; several are joined. It needs no mux: an empty Addr is
// left to New, which takes the mux's bound address.
func (cfg Config) Validate() error {
	var errs []error
	if err := ValidateID(cfg.ID); err != nil {
		errs = append(errs, fieldError(FieldID, err))
	}
	if cfg.DataDir == "" {
		errs = append(errs, invalidField(FieldDataDir, "required"))
	}
	addrOK := true
	if cfg.Addr != "" {
		if err := checkAdvertise(cfg.Addr); err != nil {
			errs = append(errs, fieldError(FieldAddr, err))
			addrOK = false
		}
	}
	errs = append(errs, cfg.checkPeers(addrOK)...)
	if err := cfg.checkJoin(); err != nil {
		errs = append(errs, err)
	}
	if _, err := cfg.timings(); err != nil {
		errs = append(errs, err)
	}
	if err := checkDiskStallTimeout(cfg.DiskStallTimeout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkAdvertise refuses addresses peers could not dial back.
func checkAdvertise(addr string) error {
	if err := ValidateAddr(addr); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return errors.New(addr + " is not reachable: the other nodes dial it, so use a reachable host, not " + host)
	}
	return nil
}

// checkPeers checks the bootstrap set on its own, then against this node's
// ID and address (the address only once it is known and valid).
func (cfg Config) checkPeers(addrOK bool) []error {
	if len(cfg.Peers) == 0 {
		return nil
	}
	if len(cfg.Join) > 0 {
		return []error{invalidField(FieldJoin, "cannot be combined with a bootstrap set of peers: "+
			"bootstrap a new cluster with peers, or join an existing one")}
	}
	if err := checkPeerList(cfg.Peers); err != nil {
		return []error{err}
	}
	if ValidateID(cfg.ID) != nil {
		return nil // reported as the ID's own error
	}
	for _, p := range cfg.Peers {
		if p.ID != cfg.ID {
			continue
		}
		if addrOK && cfg.Addr != "" && p.Addr != cfg.Addr {
			return []error{invalidFieldf(FieldPeers, "%s=%s does not match this node's address %s", p.ID, p.Addr, cfg.Addr)}
		}
		return nil
	}
	return []error{invalidFieldf(FieldPeers, "must contain this node's ID %s", cfg.ID)}
}

func (cfg Config) checkJoin() error {
	others := 0
	for _, a := range cfg.Join {
		if err := checkAdvertise(a); err != nil {
			return fieldError(FieldJoin, err)
		}
		if a != cfg.Addr {
			others++
		}
	}
	if len(cfg.Join) > 0 && others == 0 {
		return invalidFieldf(FieldJoin, "must name at least one node other than this one (%s)", cfg.Addr)
	}
	return nil
}

// timings resolves Raft's three timeouts. An unset timing is clamped to the
// ones that are set, so a 200ms heartbeat alone is valid; values set
// explicitly and in conflict are refused.
func (cfg Config) timings() (*raft.Config, error) {
	rc := raft.DefaultConfig()
	for _, t := range []struct {
		field string
		v     time.Duration
		dst   *time.Duration
	}{
		{FieldHeartbeatTimeout, cfg.HeartbeatTimeout, &rc.HeartbeatTimeout},
		{FieldElectionTimeout, cfg.ElectionTimeout, &rc.ElectionTimeout},
		{FieldLeaderLeaseTimeout, cfg.LeaderLeaseTimeout, &rc.LeaderLeaseTimeout},
	} {
		switch {
		case t.v < 0:
			return nil, invalidFieldf(t.field, "%s must not be negative", t.v)
		case t.v > 0 && t.v < minTimeout:
			return nil, invalidFieldf(t.field, "%s must be at least %s", t.v, minTimeout)
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
		return nil, invalidFieldf(FieldElectionTimeout, "%s must be at least the heartbeat timeout %s", rc.ElectionTimeout, rc.HeartbeatTimeout)
	}
	if rc.LeaderLeaseTimeout > rc.HeartbeatTimeout {
		return nil, invalidFieldf(FieldLeaderLeaseTimeout, "%s must not exceed the heartbeat timeout %s", rc.LeaderLeaseTimeout, rc.HeartbeatTimeout)
	}
	return rc, nil
}

// raftConfig builds Raft's configuration from a validated Config.
func (cfg Config) raftConfig() (*raft.Config, error) {
	rc, err := cfg.timings()
	if err != nil {
		return nil, err
	}
	rc.LocalID = raft.ServerID(cfg.ID)
	// A removed node must never carry on as a one-node cluster.
	rc.ShutdownOnRemove = true
	// Enough history for a lagging follower to catch up from the log
	// instead of looping on snapshot installs.
	rc.TrailingLogs = trailingLogs
	// A proposal is queued without waiting for Raft's leader loop, so one
	// goroutine's proposals in a row (a scheduler tick's entries) share a
	// disk write instead of taking one each. Every caller bounds its wait
	// by its context, not by Raft's enqueue timeout, which this gives up.
	rc.BatchApplyCh = true
	rc.CommitTimeout = commitTimeout
	rc.Logger = newHCLog(cfg.Logger.With("node", cfg.ID), "raft")
	if cfg.tune != nil {
		cfg.tune(rc)
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, invalidf("raft configuration: %v", err)
	}
	return rc, nil
}
