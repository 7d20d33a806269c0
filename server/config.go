package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/ops"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/scheduler/remote"
	"github.com/raftcron/raftcron/secret"
)

// FieldHTTPAddr, FieldHealthAddr, FieldTLS, FieldWorkerLease and
// FieldHTTPHosts name these fields in a *cluster.ConfigError; the other
// fields keep cluster's names (cluster.FieldID, ...).
const (
	FieldHTTPAddr    = "HTTPAddr"
	FieldHealthAddr  = "HealthAddr"
	FieldTLS         = "TLS"
	FieldWorkerLease = "WorkerLease"
	FieldHTTPHosts   = "HTTPHosts"
)

// Config is one node's configuration. It names no flags: cmd/node fills it
// from flags, the environment and a file, tests fill it directly. Errors
// about it are *cluster.ConfigError naming the field.
type Config struct {
	// ID is the node's permanent Raft server ID.
	ID string
	// DataDir holds the Raft log, stable store and snapshots.
	DataDir string
	// Addr is the host:port of the node's one port for Raft and gRPC, bound
	// and advertised to the other nodes.
	Addr string
	// HTTPAddr is the host:port of the ops port (status, metrics, the JSON
	// API and the UI): HTTPS with the node's certificate when TLS is set,
	// plain HTTP otherwise. Port 0 picks a free one (HTTPAddr() tells which).
	HTTPAddr string
	// HealthAddr, if set, is the host:port of a plain-HTTP port serving
	// only /livez and /readyz, for probes that cannot speak TLS. It reveals
	// only liveness, so anyone may call it; port 0 picks a free one.
	HealthAddr string
	// HTTPHosts are the names besides IP literals and localhost that the
	// JSON API and the UI on the ops port answer as Host; other names get
	// 421, against DNS rebinding (ops.Hosts).
	HTTPHosts []string
	// Peers is the bootstrap set, Join the nodes to join through; both are
	// used only while DataDir holds no Raft state.
	Peers []cluster.Peer
	Join  []string

	// Raft timings; zero means Raft's defaults, fitted to the ones set.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// DiskStallTimeout is how long a Raft disk write may run before the
	// node reports not ready, and exits if it leads; zero means
	// cluster.DefaultDiskStallTimeout.
	DiskStallTimeout time.Duration

	// TLS, if set, makes every connection to Addr TLS (cluster.ListenTLS):
	// Raft and node-to-node forwarding only for node certificates of its
	// CA, the API for clients as TLS.VerifyClients says. nil is plaintext,
	// for loopback and networks the operator vouches for. Its Logger
	// defaults to Logger.
	TLS *cluster.TLSConfig

	// Limits bound what the node holds and serves; zero fields take
	// their defaults.
	Limits Limits
	// Policy is what jobs may do on this node: exec, egress, signing.
	Policy Policy

	// ACL requires an ACL token on every gRPC call but the health service
	// (docs/acl.md); set it alike on every node.
	ACL bool
	// ACLBootstrapSecret, if set (serve --acl-bootstrap-file), is the
	// secret of the cluster's first management token: while this node
	// leads a cluster not yet bootstrapped, it bootstraps with it, and it
	// refuses BootstrapAcl. Needs ACL; give every node the same.
	ACLBootstrapSecret string
	// AuditLimit is how many audit records the cluster keeps while this
	// node leads, up to fsm.MaxAuditLimit; 0 means api.DefaultAuditLimit.
	// Set it alike on every node.
	AuditLimit int
	// SecretKeys are the keys of --secrets-key-file: the first seals the
	// secret values this node receives, every one opens them. nil: the
	// node stores no secret, and stops once it finds the cluster storing
	// one (ErrSecretKeys). Give every node the same keys.
	SecretKeys *secret.Keyring

	// Alerts is how this node sends alert notifications while it leads.
	Alerts AlertConfig

	// WorkerLease: a remote worker that sends nothing for this long, or
	// whose stream breaks, loses its attempts (DESIGN §14); zero means
	// remote.DefaultLease, otherwise at least remote.MinLease.
	WorkerLease time.Duration

	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
	// Version is reported by /metrics (raftcron_build_info).
	Version string

	// What follows exists for tests, which run several nodes in one
	// process and inject faults; production leaves it zero.

	// Listener, if set, is the node's one port, bound by the caller (so
	// that a test knows every address before it writes the peers). Addr
	// may then be empty: it becomes the listener's address.
	Listener net.Listener
	// Isolation, if set, can cut the node off the network at its transport.
	Isolation *cluster.Isolation
	// Clock is the scheduler's clock; nil means the system clock.
	Clock scheduler.Clock
	// Now is the leader's clock, which stamps every command it proposes
	// for a client, and the API's reference for validation and previews;
	// nil means time.Now.
	Now func() time.Time
	// WrapExecutor, if set, wraps the executor that delivers attempts.
	WrapExecutor func(dispatch.Executor) dispatch.Executor
	// OnLeadershipChange, if set, is called after the scheduler has been
	// told of a change of this node's leadership. It must return quickly.
	OnLeadershipChange func(isLeader bool)
	// NoSync skips fsync: unit tests only, a crash then loses acknowledged
	// writes.
	NoSync bool
}

// Validate reports every broken rule of cfg at once, each as a
// *cluster.ConfigError naming its field, and changes nothing.
func (cfg Config) Validate() error {
	cfg = cfg.withListenerAddr()
	var addrErr error
	if cfg.Addr == "" {
		// cluster would take the bound address; here it is what to bind.
		addrErr = &cluster.ConfigError{Field: cluster.FieldAddr, Rule: "required (HOST:PORT)", Err: cluster.ErrInvalidConfig}
	}
	var tlsErr error
	if cfg.TLS != nil && cfg.TLS.Source == nil {
		tlsErr = &cluster.ConfigError{Field: FieldTLS, Rule: "Source is required", Err: cluster.ErrInvalidConfig}
	}
	var healthErr error
	if cfg.HealthAddr != "" {
		healthErr = checkListenAddr(FieldHealthAddr, cfg.HealthAddr)
	}
	return errors.Join(cfg.cluster().Validate(), addrErr, checkListenAddr(FieldHTTPAddr, cfg.HTTPAddr), healthErr,
		checkHTTPHosts(cfg.HTTPHosts), cfg.Limits.validate(), tlsErr, checkAuditLimit(cfg.AuditLimit), checkWorkerLease(cfg.WorkerLease),
		cfg.checkACLBootstrap(), cfg.Alerts.validate())
}

// checkHTTPHosts: the Host check's own rule (ops.NewHosts).
func checkHTTPHosts(names []string) error {
	if _, err := ops.NewHosts(names); err != nil {
		return &cluster.ConfigError{Field: FieldHTTPHosts, Rule: err.Error(), Err: cluster.ErrInvalidConfig}
	}
	return nil
}

// withListenerAddr takes the address of a listener the caller bound.
func (cfg Config) withListenerAddr() Config {
	if cfg.Addr == "" && cfg.Listener != nil {
		cfg.Addr = cfg.Listener.Addr().String()
	}
	return cfg
}

// cluster is the part of cfg that the cluster node validates and runs on,
// with the command versions of this build's FSM.
func (cfg Config) cluster() cluster.Config {
	return cluster.Config{
		ID:                 cfg.ID,
		Addr:               cfg.Addr,
		DataDir:            cfg.DataDir,
		Peers:              cfg.Peers,
		Join:               cfg.Join,
		HeartbeatTimeout:   cfg.HeartbeatTimeout,
		ElectionTimeout:    cfg.ElectionTimeout,
		LeaderLeaseTimeout: cfg.LeaderLeaseTimeout,
		DiskStallTimeout:   cfg.DiskStallTimeout,
		Now:                cfg.Now,
		CommandVersion:     fsm.CommandVersion,
		VersionOf:          fsm.VersionOf,
		// The leader raises the cluster version once every voter runs
		// this build (cluster/clusterversion.go).
		RaiseClusterVersion: fsm.SetClusterVersion,
		NoSync:              cfg.NoSync,
	}
}

// checkWorkerLease: the worker hub's bounds (remote.New), reported with
// the others.
func checkWorkerLease(d time.Duration) error {
	if d == 0 || d >= remote.MinLease {
		return nil
	}
	return &cluster.ConfigError{Field: FieldWorkerLease, Err: cluster.ErrInvalidConfig,
		Rule: fmt.Sprintf("must be at least %s, got %s", remote.MinLease, d)}
}

// checkListenAddr: the ops and probe ports are only listened on, so any
// host (or none) will do; the port must be a number.
func checkListenAddr(field, addr string) error {
	invalid := func(rule string) error {
		return &cluster.ConfigError{Field: field, Rule: rule, Err: cluster.ErrInvalidConfig}
	}
	if addr == "" {
		return invalid("required (HOST:PORT)")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return invalid(strconv.Quote(addr) + " is not HOST:PORT")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return invalid(strconv.Quote(addr) + " needs a port between 0 (any free port) and 65535")
	}
	return nil
}
