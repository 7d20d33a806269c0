package cluster

import (
	"errors"
	"fmt"
)

// One sentinel per condition; callers test with errors.Is.
var (
	// ErrNoLeader: no leader is known, or the known leader cannot be reached.
	// Returned as *NoLeaderError, which carries the last known leader.
	ErrNoLeader = errors.New("no leader")
	// ErrNotLeader: an operation only the leader may perform reached a node
	// that is not the leader. Nothing was written.
	ErrNotLeader = errors.New("not the leader")
	// ErrIndeterminate: the command reached Raft but this node cannot tell
	// whether it was committed (leadership lost or deadline hit while
	// committing). It may still commit under the next leader, so callers must
	// not assume it failed; reading the state again tells.
	ErrIndeterminate = errors.New("outcome unknown: the command may still be committed")
	// ErrShutdown: the node has been shut down.
	ErrShutdown = errors.New("node is shut down")
	// ErrNotFound: no server with that ID is in the cluster configuration.
	ErrNotFound = errors.New("server not found")
	// ErrServerExists: the server ID or address is already in the
	// configuration with a different counterpart.
	ErrServerExists = errors.New("server already in the cluster configuration")
	// ErrDataDirLocked: another process (or node) holds the data dir's lock.
	ErrDataDirLocked = errors.New("data dir is in use by another raftcron process")
	// ErrAddrInUse: the --addr port is taken.
	ErrAddrInUse = errors.New("address already in use")
	// ErrInvalidConfig: a Config field or flag value breaks a rule.
	ErrInvalidConfig = errors.New("invalid cluster configuration")
	// ErrDiskStalled: a Raft write to this node's disk has not returned
	// within the disk stall timeout while the node leads.
	ErrDiskStalled = errors.New("raft disk write stalled")
	// ErrRestoreRunning: a snapshot restore was asked for while another one
	// runs on this node. Nothing was changed.
	ErrRestoreRunning = errors.New("another snapshot restore is running")
)

// NoLeaderError is returned when a request needs the leader and none is
// known or reachable. errors.Is(err, ErrNoLeader) holds.
type NoLeaderError struct {
	// LeaderID and LeaderAddr name the last leader this node knew of, if any.
	LeaderID, LeaderAddr string
	// Err is why the last known leader could not be used, if known.
	Err error
}

func (e *NoLeaderError) Error() string {
	msg := "no leader known"
	if e.LeaderAddr != "" {
		msg = fmt.Sprintf("no leader reachable (last known leader %s at %s)", e.LeaderID, e.LeaderAddr)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NoLeaderError) Is(target error) bool { return target == ErrNoLeader }

func (e *NoLeaderError) Unwrap() error { return e.Err }

// dataDirLockedError keeps the message naming the directory while matching
// ErrDataDirLocked.
type dataDirLockedError struct{ dir string }

func (e *dataDirLockedError) Error() string {
	return fmt.Sprintf("data dir %s is in use by another raftcron process", e.dir)
}

func (e *dataDirLockedError) Is(target error) bool { return target == ErrDataDirLocked }

// configError is a rule violation in Config; its message names the flag.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func (e *configError) Is(target error) bool { return target == ErrInvalidConfig }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}
