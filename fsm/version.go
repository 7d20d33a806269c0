package fsm

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// CommandVersion is the highest command version this build applies. Nodes
// advertise it, and the leader proposes a command only once every voter
// advertises at least VersionOf it, so a node never meets a kind it cannot
// apply in a healthy rolling upgrade. Version 2 added the ACL commands,
// cancel_run, set_audit and record_membership; version 3 changes rules of
// existing kinds (clusterversion.go: version3), adds the secret store,
// calendars and freezes, remote workers' progress (record_progress),
// check-ins, alerts, the fields of create_acl_token that bind worker
// tokens to pools and make tokens expire, the worker target's lease, and
// jobs' dependencies (chains: the fields of put_job and delete_job they
// need) (laterFields), and from it nodes sign their dispatches v2
// (SignaturesV2Version).
const CommandVersion uint32 = 3

// introducedIn is the command version that introduced each kind, by the
// name of its Command.kind oneof field. A new kind is one line here (and
// CommandVersion raised to it if it is the first of its version); a test
// fails if a kind is missing.
var introducedIn = map[protoreflect.Name]uint32{
	"put_job":          1,
	"delete_job":       1,
	"set_paused":       1,
	"fire_batch":       1,
	"complete_batch":   1,
	"cancel_run":       2,
	"bootstrap_acl":    2,
	"create_acl_token": 2,
	"delete_acl_token": 2,
	"set_audit":        2,
	// Only records membership changes; a no-op while the trail is off.
	"record_membership": 2,
	// Also the version it raises to, if higher (VersionOf).
	"set_cluster_version": 2,
	"put_secret":          3,
	"delete_secret":       3,
	"rotate_secrets":      3,
	"put_calendar":        3,
	"delete_calendar":     3,
	"create_freeze":       3,
	"delete_freeze":       3,
	"record_progress":     3,
	"checkin":             3,
	"put_channel":         3,
	"delete_channel":      3,
	"put_notify_rule":     3,
	"delete_notify_rule":  3,
	"check_alerts":        3,
	"record_deliveries":   3,
	"start_backfill":      3,
	"cancel_backfill":     3,
	"end_pause":           3,
}

// ErrUnknownCommand: a committed entry holds a command kind this build does
// not know, proposed by a newer leader. Apply returns it as an error value
// instead of a result, because answering MALFORMED would apply something
// different from the peers that know the kind: the node must stop and be
// upgraded.
var ErrUnknownCommand = errors.New("command kind unknown to this build")

// VersionOf is the command version that introduced c's kind: what every
// voter must understand before a leader proposes c. A kind this build does
// not know needs a newer version than CommandVersion. A command with no
// kind at all is version 1: every build refuses it alike, as malformed. A
// set_cluster_version needs the version it raises to as well: every voter
// must apply those rules.
func VersionOf(c *pb.Command) uint32 {
	if raise := c.GetSetClusterVersion(); raise != nil {
		return max(introducedIn["set_cluster_version"], raise.GetVersion())
	}
	if c == nil {
		return 1
	}
	fd := c.ProtoReflect().WhichOneof(kindOneof)
	if fd == nil {
		if _, ok := unknownKind(c); ok {
			return CommandVersion + 1
		}
		return 1
	}
	if v, ok := introducedIn[fd.Name()]; ok {
		return max(v, fieldsVersion(c))
	}
	// Compiled in but not listed (the test prevents it): assume the newest
	// version this build knows rather than one an older voter may lack.
	return CommandVersion
}

// laterFields are the fields existing kinds gained after the kind itself,
// each with the command version that introduced it. A build from before
// them decodes the command and drops what it does not know, so it would
// reach another state than its peers: a command that sets one waits, like
// a new kind, until every voter applies its version.
var laterFields = []struct {
	version uint32
	set     func(*pb.Command) bool
}{
	{version3, func(c *pb.Command) bool { // a worker token's pools and cap, an expiry
		cr := c.GetCreateAclToken()
		t := cr.GetToken()
		return cr.GetTtl() != nil || len(t.GetPools()) > 0 || t.GetMaxConcurrency() > 0 || t.GetExpiresAt() != nil
	}},
	{version3, func(c *pb.Command) bool { // a worker target's lease: an older leader would drop it
		return c.GetPutJob().GetSpec().GetWorker().GetLease() != nil
	}},
	{version3, func(c *pb.Command) bool { // several schedules, jitter, limited runs, pausing on failures
		spec := c.GetPutJob().GetSpec()
		return len(spec.GetSchedules()) > 0 || spec.GetJitter() != nil || spec.GetMaxRuns() > 0 ||
			spec.GetPauseAfterFailures() > 0
	}},
	{version3, func(c *pb.Command) bool { return c.GetSetPaused().GetUntilUnix() != 0 }}, // a pause that ends by itself
	{ChainsVersion, func(c *pb.Command) bool { // a job's dependencies, a forced delete of a parent
		p := c.GetPutJob()
		return p.GetMaxChainDepth() > 0 || p.GetMaxChainFanout() > 0 || hasDependencies(p.GetSpec()) ||
			c.GetDeleteJob().GetForce()
	}},
}

// hasDependencies reports whether spec sets any field of chains.
func hasDependencies(spec *pb.JobSpec) bool {
	return len(spec.GetAfter()) > 0 || spec.GetAfterMode() != 0 || spec.GetAfterWithin() != nil || spec.GetAfterMissing() != 0
}

// fieldsVersion is the newest command version among the later fields c
// sets, 1 if none.
func fieldsVersion(c *pb.Command) uint32 {
	v := uint32(1)
	for _, f := range laterFields {
		if f.version > v && f.set(c) {
			v = f.version
		}
	}
	return v
}

// firstKindNumber is the lowest field number of a Command.kind case.
// command.proto keeps Command's other fields below it, so an unknown
// length-delimited field at or above it is a kind from a newer build.
var firstKindNumber = func() protowire.Number {
	fields := kindOneof.Fields()
	lowest := fields.Get(0).Number()
	for i := 1; i < fields.Len(); i++ {
		lowest = min(lowest, fields.Get(i).Number())
	}
	return lowest
}()

// unknownKind reports whether c sets no known kind but carries one this
// build does not know. proto3 decodes an unknown oneof case into the
// message's unknown fields and leaves the oneof unset, so this is the one
// way to tell a newer command from a malformed one. It returns the unknown
// field numbers for the operator's message.
func unknownKind(c *pb.Command) ([]protowire.Number, bool) {
	if c.ProtoReflect().WhichOneof(kindOneof) != nil {
		return nil, false
	}
	var kinds []protowire.Number
	b := c.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return nil, false
		}
		if typ == protowire.BytesType && num >= firstKindNumber {
			kinds = append(kinds, num)
		}
		b = b[n:]
	}
	return kinds, len(kinds) > 0
}

// unknownCommand is the error Apply returns for an entry of a newer kind;
// it names the entry and what to do about it.
func unknownCommand(index uint64, fields []protowire.Number) error {
	nums := make([]string, len(fields))
	for i, f := range fields {
		nums[i] = fmt.Sprint(f)
	}
	return fail(ErrUnknownCommand, "log entry %d holds a command of a kind this build does not know "+
		"(raftcron.v1.Command field %s; this build applies command versions up to %d): a newer leader "+
		"proposed it; upgrade this node to the cluster's newest release and start it again",
		index, strings.Join(nums, ", "), CommandVersion)
}
