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
	// ErrAddrInUse: the port of the node's address is taken.
	ErrAddrInUse = errors.New("address already in use")
	// ErrNotForwardable: the command is one that only the leading node
	// proposes itself, through ApplyLocal (its scheduler's FireBatch and
	// CompleteBatch, the raise of the cluster version); Apply and
	// forwarding never carry it.
	ErrNotForwardable = errors.New("only the leading node itself proposes this command: it is never forwarded")
	// ErrMalformedCommand: forwarded bytes do not decode as a command.
	// Nothing was written.
	ErrMalformedCommand = errors.New("forwarded command does not decode as a raftcron.v1.Command")
	// ErrInvalidConfig: a Config field or a request breaks a rule.
	ErrInvalidConfig = errors.New("invalid cluster configuration")
	// ErrUnsupportedCommand: the command's version is above what some voter
	// applies (or a voter could not say); nothing was written. The message
	// names the voters to upgrade.
	ErrUnsupportedCommand = errors.New("a voter does not apply this command's version")
	// ErrHalted: the node stopped itself because its FSM cannot apply a
	// committed entry (a kind of a newer release); it must be upgraded.
	ErrHalted = errors.New("node stopped: it cannot apply a committed log entry")
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

// ConfigError is a Config field whose value breaks a rule or cannot be
// used. It names the field, never a flag: the caller knows where the value
// came from. errors.Is matches Err: ErrInvalidConfig for a broken rule,
// ErrAddrInUse for a taken port. Field is empty for a request's values
// (AddVoter's ID) rather than a Config's.
type ConfigError struct {
	Field string
	Rule  string
	Err   error
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

func (e *ConfigError) Unwrap() error { return e.Err }

func invalidField(field, rule string) error {
	return &ConfigError{Field: field, Rule: rule, Err: ErrInvalidConfig}
}

func invalidFieldf(field, format string, args ...any) error {
	return invalidField(field, fmt.Sprintf(format, args...))
}

// fieldError reports a rule a field's value breaks, in err's words.
func fieldError(field string, err error) error { return invalidField(field, err.Error()) }

// invalidf is a broken rule that belongs to no Config field.
func invalidf(format string, args ...any) error { return invalidFieldf("", format, args...) }

// unsupportedError is ErrUnsupportedCommand with the message that names the
// voters to upgrade; forwarding carries the message to the follower.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }

func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupportedCommand }
