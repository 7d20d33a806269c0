// Package cluster runs a node's Raft: storage, the one-port transport,
// bootstrap and membership, leadership notifications, writes forwarded to
// the leader and linearizable read barriers. It moves opaque commands and
// knows nothing of what they mean.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	logCacheSize   = 512
	snapshotsKept  = 2
	transportPool  = 5
	transportIO    = 10 * time.Second
	boltOpenWait   = time.Second
	notifyChBuffer = 16
)

// Node is one running Raft member. Its methods are safe for concurrent use.
type Node struct {
	cfg Config
	log *slog.Logger
	rc  *raft.Config
	// raft is set by Start; nil before, so no other method may be called
	// until Start has returned (Shutdown excepted).
	raft  *raft.Raft
	fsm   *trackingFSM
	logs  raft.LogStore
	store *raftboltdb.BoltStore
	trans *raft.NetworkTransport
	// served: the transport's inbound connections, drained before the
	// store closes (served.go).
	served *served
	peers  *peerConns
	// tls: the node's port is TLS, so InternalService admits node
	// certificates only.
	tls bool
	// bulkSem bounds ApplyBulk's entries in flight (apply_bulk.go).
	bulkSem slots

	// isLeader mirrors Raft's NotifyCh; only the watcher writes it.
	isLeader      atomic.Bool
	leaderChanges atomic.Uint64
	notifyCh      chan bool
	stopWatch     chan struct{} // closed on shutdown: ends both watchers
	watchDone     chan struct{}
	crashDone     chan struct{}
	// raiseNow wakes raiseVersion when this node gains leadership;
	// raiseDone is closed when raiseVersion ends (clusterversion.go).
	raiseNow  chan struct{}
	raiseDone chan struct{}
	// lease is Raft's LeaderLeaseTimeout, the silence after which
	// watchCrash probes the leader; deposed wakes watchCrash, asleep while
	// this node leads, when it stops leading.
	lease   time.Duration
	deposed chan struct{}
	// crashWatchAsleep: watchCrash sleeps until this leader is deposed
	// (tests).
	crashWatchAsleep atomic.Bool
	// earlyElections counts the times watchCrash shortened Raft's timers.
	earlyElections atomic.Uint64

	// lastLeader survives the moments Raft forgets the leader, so a
	// NoLeaderError can still point somewhere.
	lastLeader atomic.Pointer[pb.ServerRef]
	// barrierTerm is the term in which this node, as leader, committed a
	// barrier: only then is its commit index current (see readIndex).
	barrierTerm atomic.Uint64
	// verified is the highest index the FSM is known to reflect.
	verified atomic.Uint64
	// termStart caches where the current term begins in the log (Ready).
	termStart atomic.Pointer[termStart]

	// bootstrapped records that this start created a new cluster.
	bootstrapped bool
	// proposals stops this node's proposals while a restore runs.
	proposals proposalGate
	// disk times Raft's disk writes (diskwatch.go).
	disk *diskWatch

	// versions caches, on the leader, what the voters said they apply.
	versions voterVersions
	// contacts: the peers whose heartbeats fail, on the leader
	// (contact.go); contactDone is closed when it stops noting them.
	contacts    *contacts
	contactDone chan struct{}
	// raftUp is closed once raft is set.
	raftUp chan struct{}
	// raftStop closes its channel once Raft has stopped (stranded.go).
	raftStop *raftStop
	// halted is closed, after haltErr is set, when the FSM cannot apply a
	// committed entry (halt.go).
	halted  chan struct{}
	haltErr error

	started      atomic.Bool
	closed       atomic.Bool
	shutdownOnce sync.Once
	shutdownErr  error
}

// New validates cfg and opens the node's storage, snapshot store and
// transport on the mux's Raft route; Raft itself runs only from Start, so
// that the caller can wire what the FSM and OnLeadershipChange feed before
// the first entry is applied. One Node per Mux. The caller serves
// RegisterInternal on mux.GRPCListener(), calls Shutdown (also when Start
// fails or was never called) and closes the mux after it.
func New(cfg Config, mux *Mux) (*Node, error) {
	switch {
	case mux == nil:
		return nil, invalidf("cluster: nil mux")
	case cfg.FSM == nil:
		return nil, invalidf("cluster: Config.FSM must not be nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CommandVersion == 0 {
		cfg.CommandVersion = baseCommandVersion
	}
	if cfg.VersionOf == nil {
		cfg.VersionOf = func(*pb.Command) uint32 { return baseCommandVersion }
	}
	if cfg.Addr == "" {
		cfg.Addr = mux.Addr().String()
	}
	if cfg.DiskStallTimeout == 0 {
		cfg.DiskStallTimeout = DefaultDiskStallTimeout
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc, err := cfg.raftConfig()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, &ConfigError{Field: FieldDataDir, Rule: err.Error(), Err: err}
	}
	store, err := openStore(cfg.DataDir, cfg.NoSync)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:       cfg,
		log:       cfg.Logger.With("node", cfg.ID),
		rc:        rc,
		store:     store,
		served:    newServed(),
		peers:     newPeerConns(mux.isolation(), mux.tls),
		tls:       mux.tls != nil,
		bulkSem:   newSlots(bulkInFlight),
		notifyCh:  make(chan bool, notifyChBuffer),
		stopWatch: make(chan struct{}),
		watchDone: make(chan struct{}),
		crashDone: make(chan struct{}),
		raiseNow:  make(chan struct{}, 1),
		deposed:   make(chan struct{}, 1),
		raiseDone: make(chan struct{}),
		lease:     rc.LeaderLeaseTimeout,
		raftUp:    make(chan struct{}),
		raftStop:  newRaftStop(),
		halted:    make(chan struct{}),

		contacts:    newContacts(),
		contactDone: make(chan struct{}),
	}
	n.disk = newDiskWatch(cfg.DiskStallTimeout, n.log, cfg.beforeDiskWrite)
	if err := n.open(mux); err != nil {
		store.Close()
		return nil, err
	}
	return n, nil
}

func openStore(dir string, noSync bool) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:   path,
		NoSync: noSync,
		// The timeout turns a second process on the same dir into an
		// error instead of a hang on the file lock.
		BoltOptions: &bbolt.Options{Timeout: boltOpenWait, NoFreelistSync: true},
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, &dataDirLockedError{dir: dir}
	}
	if err != nil {
		return nil, fmt.Errorf("open raft store %s: %w", path, err)
	}
	return store, nil
}

// open builds the log cache, the snapshot store and the transport.
func (n *Node) open(mux *Mux) error {
	logs, err := newLogCache(logCacheSize, watchedLogStore{n.store, n.disk})
	if err != nil {
		return fmt.Errorf("raft log cache: %w", err)
	}
	n.logs = logs
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.DataDir, snapshotsKept, newHCLog(n.log, "raft-snapshot"))
	if err != nil {
		return fmt.Errorf("raft snapshot store in %s: %w", n.cfg.DataDir, err)
	}
	n.fsm = &trackingFSM{FSM: n.cfg.FSM, snaps: snaps, onStuck: n.halt}
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: &streamLayer{subListener: mux.raft, advertise: advertiseAddr(n.cfg.Addr), tls: mux.tls,
			iso: mux.isolation(), served: n.served},
		MaxPool: transportPool,
		Timeout: transportIO,
		Logger:  newHCLog(n.log, "raft-net"),
	})
	return nil
}

// Start starts Raft, which replays the node's state into the FSM, and
// bootstraps or joins if the data dir held no Raft state; ctx bounds the
// join. It may be called once. On error, Shutdown releases what New opened.
func (n *Node) Start(ctx context.Context) error {
	if !n.started.CompareAndSwap(false, true) {
		return errors.New("cluster: node already started")
	}
	if n.closed.Load() {
		return ErrShutdown
	}
	n.rc.NotifyCh = n.notifyCh
	go n.watchLeadership()
	r, err := raft.NewRaft(n.rc, n.fsm, n.logs, watchedStableStore{n.store, n.disk}, n.fsm.snaps, n.trans)
	if err != nil {
		close(n.stopWatch)
		<-n.watchDone
		return fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	close(n.raftUp)
	r.RegisterObserver(n.contacts.observer())
	r.RegisterObserver(n.raftStop.observer())
	go n.contacts.run(n.stopWatch, n.contactDone)
	go n.watchCrash(n.stopWatch, n.crashDone)
	if n.cfg.ClusterVersion != nil && n.cfg.RaiseClusterVersion != nil {
		go n.raiseVersion(n.stopWatch, n.raiseDone)
	} else {
		close(n.raiseDone)
	}
	n.disk.start(func() bool { return r.State() == raft.Leader })
	return n.bootstrapOrJoin(ctx)
}

// bootstrapOrJoin acts only on a data dir without Raft state: a restarted
// node already knows its cluster.
func (n *Node) bootstrapOrJoin(ctx context.Context) error {
	existing, err := raft.HasExistingState(n.logs, n.store, n.fsm.snaps)
	if err != nil {
		return fmt.Errorf("read raft state in %s: %w", n.cfg.DataDir, err)
	}
	switch {
	case existing:
		n.log.Info("restarting with existing raft state", "data_dir", n.cfg.DataDir)
		return nil
	case len(n.cfg.Peers) > 0:
		return n.bootstrap()
	case len(n.cfg.Join) > 0:
		return n.join(ctx)
	default:
		n.log.Warn("no raft state, no peers to bootstrap with and none to join: waiting to be added to a cluster", "addr", n.cfg.Addr)
		return nil
	}
}

func (n *Node) bootstrap() error {
	var conf raft.Configuration
	for _, p := range n.cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr),
		})
	}
	err := n.raft.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil // state appeared meanwhile: already bootstrapped
	}
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	n.bootstrapped = true
	n.log.Info("bootstrapped a new cluster", "peers", len(conf.Servers))
	return nil
}

// watchLeadership drains NotifyCh. Raft blocks until each value is read, so
// this goroutine never calls into Raft: that could deadlock the node.
func (n *Node) watchLeadership() {
	defer close(n.watchDone)
	for {
		select {
		case v := <-n.notifyCh:
			n.setLeader(v)
		case <-n.stopWatch:
			n.setLeader(false)
			return
		}
	}
}

func (n *Node) setLeader(v bool) {
	if n.isLeader.Swap(v) == v {
		return
	}
	n.leaderChanges.Add(1)
	n.contacts.reset()
	n.log.Info("leadership changed", "leader", v)
	wake := n.deposed
	if v {
		wake = n.raiseNow
	}
	select { // never blocks: Raft waits on this goroutine
	case wake <- struct{}{}:
	default:
	}
	if cb := n.cfg.OnLeadershipChange; cb != nil {
		cb(v)
	}
}

// IsLeader reports whether this node currently leads, as last notified by
// Raft.
func (n *Node) IsLeader() bool { return n.isLeader.Load() }

// LeaderChanges counts this node's leadership transitions (gained or lost).
func (n *Node) LeaderChanges() uint64 { return n.leaderChanges.Load() }

// Leader returns the current leader, or empty strings if none is known.
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	id, addr = string(i), string(a)
	if addr != "" {
		if last := n.lastLeader.Load(); last == nil || last.Id != id || last.Address != addr {
			n.lastLeader.Store(&pb.ServerRef{Id: id, Address: addr})
		}
	}
	return id, addr
}

// noLeader builds the error naming the last leader this node knew.
func (n *Node) noLeader(cause error) error {
	e := &NoLeaderError{Err: cause}
	if last := n.lastLeader.Load(); last != nil {
		e.LeaderID, e.LeaderAddr = last.Id, last.Address
	}
	return e
}

// Shutdown hands leadership to another voter if this node leads (bounded by
// ctx), then stops Raft and releases the transport, storage and peer
// connections. It is idempotent; later calls return the first result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.shutdown(ctx) })
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	if n.raft == nil {
		// Never started, or Raft failed to start: only storage to release.
		n.closed.Store(true)
		n.trans.Close()
		n.peers.close()
		return n.store.Close()
	}
	if n.raft.State() == raft.Leader && n.voters() > 1 {
		start := time.Now()
		if err := waitFuture(ctx, n.raft.LeadershipTransfer()); err != nil {
			n.log.Warn("leadership transfer before shutdown failed", "error", err)
		} else {
			n.log.Info("leadership transferred before shutdown", "took", time.Since(start))
		}
	}
	n.snapshotBeforeStop(ctx)
	n.closed.Store(true)
	err := n.raft.Shutdown().Error()
	close(n.stopWatch)
	<-n.watchDone
	<-n.crashDone
	<-n.raiseDone
	<-n.contactDone
	n.disk.close()
	n.trans.Close() // raft closes it too; closing twice is harmless
	if !n.served.drain(handlerDrainTimeout) {
		n.log.Warn("raft transport handlers still running at shutdown; closing the store anyway", "waited", handlerDrainTimeout)
	}
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	n.peers.close()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func (n *Node) voters() int {
	count := 0
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if s.Suffrage == raft.Voter {
			count++
		}
	}
	return count
}

// waitFuture waits for f or ctx, whichever ends first. A future left behind
// still resolves, so the waiting goroutine ends, unless Raft stopped with
// it in its apply queue (stranded.go): proposals wait with awaitProposal.
func waitFuture(ctx context.Context, f raft.Future) error {
	return awaitFuture(ctx, f, nil)
}

// raftTimeout turns the caller's deadline into Raft's enqueue timeout.
func raftTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 10 * time.Second
}

// raftError maps the errors of a local Raft call. Only ErrLeadershipLost is
// indeterminate: the others mean nothing was written.
func raftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %w", ErrIndeterminate, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	default:
		return err
	}
}
