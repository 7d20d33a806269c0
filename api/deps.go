package api

import (
	"time"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/secret"
)

// Deps is what every service of the API is built from: each New…Service
// takes the whole struct and reads the fields its comment names, so a
// composition root fills one Deps and builds any service from it, and a
// test fills only what the service under test reads. Fields a service
// does not read are ignored; a service whose required field is nil fails
// its calls, never its construction.
type Deps struct {
	// Store commits commands through Raft, forwarding to the leader.
	Store Store
	// Barrier makes the reads that follow it linearizable; nil means
	// Store's.
	Barrier Barrier
	// Registry, Ledger, Tokens and AuditLog are this node's applied state
	// (fsm.FSM is each of them).
	Registry Registry
	Ledger   RunLedger
	Tokens   TokenLister
	AuditLog AuditLog
	// Secrets is the secret store (fsm.FSM); SecretKeys seals and opens
	// values (serve --secrets-key-file; nil: this node stores no secret
	// and rotates nothing).
	Secrets    SecretStore
	SecretKeys *secret.Keyring
	// Calendars is this node's calendars and freezes (fsm.FSM): the
	// calendar and freeze services read it, and previews of a job's slots.
	Calendars Calendars
	// Alerts is the alert state (fsm.FSM): channels, notify rules,
	// alerts. ChannelTester sends test notifications (the leader's
	// alerter); nil forwards TestChannel to the leader.
	Alerts        AlertStore
	ChannelTester ChannelTester

	// Cluster is the Raft node as ClusterService needs it; Counts gives
	// its status the last hour's run counts (fsm.FSM; nil leaves them
	// out).
	Cluster Cluster
	Counts  RunCounter
	// Snapshots is the Raft node as SnapshotService needs it; ScratchDir
	// holds an upload and a rewritten copy of it while a restore runs (the
	// node's data dir, where the Raft snapshots are too); Live is this
	// node's state as a restore reads it (fsm.FSM): what it keeps, and
	// whether ACLs are bootstrapped.
	Snapshots  SnapshotNode
	ScratchDir string
	Live       backup.Live
	// Workers holds the remote workers' streams while this node leads;
	// Leader says which node leads, for a worker sent elsewhere.
	Workers WorkerHub
	Leader  LeaderInfo

	// Hub feeds WatchRuns; nil: WatchRuns answers Unimplemented.
	Hub *RunHub
	// Triggerer commits manual runs; only the leader's scheduler can. Nil:
	// this node never triggers itself and forwards TriggerJob to the
	// leader. Its cluster.ErrNotLeader ("this node does not lead, yet or
	// any more") sends the trigger to the leader instead.
	Triggerer Triggerer
	// Leadership lets a follower forward TriggerJob to the leader. Nil: no
	// forwarding.
	Leadership Leadership
	// Exec decides which programs exec jobs may run. Nil: no exec job may
	// be registered (PermissionDenied).
	Exec ExecPolicy
	// Limits bound what JobService admits; zero fields take defaults.
	Limits Limits
	// Audit switches the audit trail on before writes. Nil: never (the
	// writes still carry the caller's principal).
	Audit *AuditSwitch
	// ACLBootstrapFromFile: the leader makes the first management token
	// from serve --acl-bootstrap-file, so BootstrapAcl is refused.
	ACLBootstrapFromFile bool
	// Chains is this node's graph of job dependencies (fsm.FSM): the
	// rules a put meets before it is proposed, the graph, and the runs a
	// run fired.
	Chains ChainGraph
	// ClusterVersion is the cluster's active version (fsm.FSM's): worker
	// targets are registered only from fsm.WorkersVersion on. Nil: no
	// check.
	ClusterVersion func() uint32
	// Now is the reference for validation and schedule previews, and
	// dates tokens and saved snapshots; nil means time.Now. It never
	// stamps a command: the leader does.
	Now func() time.Time
}

// withDefaults fills the fields whose zero has a stated meaning.
func (d Deps) withDefaults() Deps {
	if d.Barrier == nil {
		d.Barrier = d.Store
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}
