package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// ErrNoState: the data dir holds no Raft state to recover.
var ErrNoState = errors.New("data dir holds no raftcron state")

// DataDirState is what a stopped node's data dir holds, as Raft sees it.
type DataDirState struct {
	// Index and Term are those of the last entry in the log (or of the
	// newest snapshot, if the log is empty): of two survivors, the one
	// with the higher term, then the higher index, has more of the
	// cluster's history.
	Index, Term uint64
	// Servers is the latest membership the data dir records.
	Servers []Peer
}

// ReadDataDir reports what a stopped node's data dir holds without
// changing it. It fails with ErrDataDirLocked while a node runs on it.
func ReadDataDir(dir string, log *slog.Logger) (DataDirState, error) {
	var st DataDirState
	err := withStores(dir, log, func(store *raftboltdb.BoltStore, snaps raft.SnapshotStore) error {
		var err error
		st, err = readDataDir(store, snaps)
		return err
	})
	return st, err
}

// Recover rewrites the membership of a stopped node's data dir to peers, so
// that the node starts as a member of that new cluster with every entry of
// its log — hashicorp/raft's RecoverCluster, as Consul's peers.json. Run
// it, with the same peers, on each node that is to carry on; other nodes
// then join with empty data dirs.
//
// It restores the newest snapshot into fsm, applies every entry of the log
// after it — committed or not: with the quorum gone, nobody can tell —
// writes a snapshot holding the result and the new membership, and empties
// the log. fsm must be a fresh instance of the FSM the node runs; do not
// use it afterwards for anything but reading. It fails with
// ErrDataDirLocked while a node runs on dir, and ErrNoState on a data dir
// without Raft state.
func Recover(dir string, peers []Peer, fsm raft.FSM, log *slog.Logger) (DataDirState, error) {
	if len(peers) == 0 {
		return DataDirState{}, invalidField(FieldPeers, "required: the members of the recovered cluster, ID=HOST:PORT,...")
	}
	if err := checkPeerList(peers); err != nil {
		return DataDirState{}, err
	}
	conf := raft.Configuration{}
	for _, p := range peers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	var st DataDirState
	err := withStores(dir, log, func(store *raftboltdb.BoltStore, snaps raft.SnapshotStore) error {
		rc := raft.DefaultConfig()
		// Raft's validation wants an ID; RecoverCluster uses it for nothing.
		rc.LocalID = "recover"
		rc.Logger = newHCLog(log, "raft")
		_, trans := raft.NewInmemTransport("")
		if err := raft.RecoverCluster(rc, fsm, store, store, snaps, trans, conf); err != nil {
			return fmt.Errorf("recover %s: %w", dir, err)
		}
		var err error
		st, err = readDataDir(store, snaps)
		return err
	})
	return st, err
}

// withStores opens dir's log and stable store and its snapshot store, as a
// node does, and closes them after fn.
func withStores(dir string, log *slog.Logger, fn func(*raftboltdb.BoltStore, raft.SnapshotStore) error) error {
	if log == nil {
		log = slog.Default()
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, ErrNoState)
	} else if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	store, err := openStore(dir, false)
	if err != nil {
		return err
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsKept, newHCLog(log, "raft-snapshot"))
	if err != nil {
		return fmt.Errorf("raft snapshot store in %s: %w", dir, err)
	}
	if ok, err := raft.HasExistingState(store, store, snaps); err != nil {
		return fmt.Errorf("read raft state in %s: %w", dir, err)
	} else if !ok {
		return fmt.Errorf("%s: %w", dir, ErrNoState)
	}
	return fn(store, snaps)
}

// readDataDir finds the last entry and the latest membership: the newest
// snapshot's, replaced by each configuration entry in the log after it.
func readDataDir(logs raft.LogStore, snaps raft.SnapshotStore) (DataDirState, error) {
	var st DataDirState
	var conf raft.Configuration
	metas, err := snaps.List()
	if err != nil {
		return st, fmt.Errorf("list snapshots: %w", err)
	}
	if len(metas) > 0 {
		st.Index, st.Term, conf = metas[0].Index, metas[0].Term, metas[0].Configuration
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return st, err
	}
	last, err := logs.LastIndex()
	if err != nil {
		return st, err
	}
	for i := max(first, st.Index+1); first > 0 && i <= last; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return st, fmt.Errorf("read log entry %d: %w", i, err)
		}
		st.Index, st.Term = l.Index, l.Term
		if l.Type == raft.LogConfiguration {
			if conf, err = decodeConfiguration(l.Data); err != nil {
				return st, fmt.Errorf("log entry %d: %w", i, err)
			}
		}
	}
	for _, s := range conf.Servers {
		st.Servers = append(st.Servers, Peer{ID: string(s.ID), Addr: string(s.Address)})
	}
	return st, nil
}

// decodeConfiguration is raft.DecodeConfiguration, which panics on data it
// cannot decode, with the panic turned into an error.
func decodeConfiguration(data []byte) (conf raft.Configuration, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("configuration entry does not decode: %v", r)
		}
	}()
	return raft.DecodeConfiguration(data), nil
}
