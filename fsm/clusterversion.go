package fsm

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The active cluster version (CockroachDB's "cluster version"): the command
// version whose rules every node applies to the kinds that already existed.
// The kind-based check (version.go) keeps a new kind out of the log until
// every voter knows it, but a build that changes how an old kind applies
// would reach another state than an older peer from the same entry, and no
// kind check notices. So such a change is gated on the active version: below
// it, this build applies the entry exactly as the release that introduced
// the version before it did. The version lives in the replicated state
// (snapshot header; absent means 1), is raised by a set_cluster_version
// entry that the leader proposes once every voter applies the version, and
// no entry lowers it. (Restoring a backup restores the file's version; the
// leader raises it again within seconds, since every voter applies it.)

// version2 is the release that added the ACL kinds, and changed how the
// kinds of version 1 apply: generation checks on manual, retry and
// re-dispatch fires and on retries after an update, put_job.max_jobs,
// fire_batch.max_open_runs, completion reasons, tombstone collection,
// updated_by, no job defaults in the FSM, a new generation for a changed
// worker target, and the re-dispatch of a lost worker's attempt by its
// token.
const version2 uint32 = 2

// version3 records each job's creation identity and keeps a job's runs
// apart from a deleted job's of the same name (history.go): a create stores
// its first generation, and a trigger's idempotency and a scoped cancel look
// only at the job's own runs. A user restore keeps the live state but the
// registry and the ledger (userrestore.go), decided by the leader from the
// active version, so that every node installs the same stream. It also
// bound worker tokens to pools and made tokens expire (fields of
// create_acl_token that only it writes, see laterFields), requires a pool
// of every worker token it creates, and counts runs per minute (tally.go):
// release ed252bd, of version 2, keeps no counts.
const version3 uint32 = 3

// AlertsVersion is the cluster version from which jobs may carry expect
// and notify (the API refuses them before): from it, every voter raises
// the alerts a run's outcome or fire implies, and keeps the counts they
// read (JobStatus.consecutive_failures, last_success_unix_nano).
const AlertsVersion = version3

// WorkersVersion is the cluster version from which the FSM applies what
// remote workers need of the kinds of version 1: a changed worker target
// starts a new generation, and a re-dispatch may name a lost attempt by
// its token. Below it an older voter may lead, which knows no worker: the
// API registers no worker target and the scheduler holds a lost attempt's
// re-dispatch until the cluster runs it.
const WorkersVersion = version2

// CheckinsVersion is the cluster version from which check-in jobs and
// tokens of role checkin are registered: the checkin command is of command
// version 3, and the rules the FSM applies to other kinds for check-in jobs
// concern jobs an older release never stores.
const CheckinsVersion = version3

// SchedulesVersion is the cluster version from which jobs may carry
// schedules, jitter, max_runs and pause_after_failures, pauses may end by
// themselves, jobs may be backfilled and triggers carry a payload or an
// overlap policy (the API refuses them before): from it, every voter fires,
// counts and pauses by them.
const SchedulesVersion = version3

// SignaturesV2Version is the cluster version from which nodes sign v2: every
// voter, so every node that may lead, runs a release that does. Below it a
// node of the previous release may lead and sign v1 only, and the nodes of
// this release sign v1 too, so that what a service receives does not depend
// on which node leads. Nothing the FSM applies reads it: it is version 3
// for what nodes send (signature v2 covers the method, URL and body of a
// request, docs/fencing.md).
const SignaturesV2Version = version3

// CalendarsVersion is the cluster version from which jobs may refer to
// calendars: a job's calendars decide its slots in the FSM, which a node
// of an earlier release, keeping the field as unknown, would not do.
// Calendars and freezes are kinds of this version, so no node meets them
// before.
const CalendarsVersion = version3

// ProgressVersion is the cluster version from which the leader commits
// remote workers' progress (record_progress, a kind of command version 3):
// below it a voter may not apply the kind, and progress stays on the
// leader.
const ProgressVersion = version3

// ChainsVersion is the cluster version from which jobs may run after
// others (after): the FSM fires their chained runs, and accepts a put of
// such a spec, from then on only; an older voter would store the spec and
// fire nothing.
const ChainsVersion = version3

// What version 1 (release 0d365cb) used where a stored spec set nothing.
// These are not job defaults (jobspec owns those): they are frozen, so that
// a node applies version 1 as that release did while an older peer runs.
const (
	v1HistoryLimit   = 10
	v1InitialBackoff = time.Second
	v1MaxBackoff     = time.Minute
)

// ErrVersionTooNew: the cluster runs a version above this build's
// CommandVersion (a set_cluster_version entry or a snapshot from newer
// builds). Apply returns it as an error value, like ErrUnknownCommand, and
// the node must stop and be upgraded: it would apply older rules than its
// peers.
var ErrVersionTooNew = errors.New("cluster version newer than this build")

// SetClusterVersion is the command that raises the active cluster version
// to v.
func SetClusterVersion(v uint32) *pb.Command {
	return &pb.Command{Kind: &pb.Command_SetClusterVersion{
		SetClusterVersion: &pb.SetClusterVersionCommand{Version: v},
	}}
}

// ClusterVersion is the active cluster version: 1 until every voter ran a
// build of version 2 and the leader raised it.
func (f *FSM) ClusterVersion() uint32 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.version
}

// atLeast reports whether the active cluster version is v or above.
func (s *state) atLeast(v uint32) bool { return s.version >= v }

// setClusterVersion raises the active version. A version at or below the
// active one changes nothing: the rules never go back.
func setClusterVersion(s *state, c *pb.Command, _ entry) (outcome, error) {
	v := c.GetSetClusterVersion().GetVersion()
	if v == 0 {
		return outcome{}, malformed("set_cluster_version.version must be at least 1")
	}
	if v <= s.version {
		return outcome{}, nil
	}
	if !s.atLeast(version2) && v >= version2 {
		s.restateV1Defaults()
	}
	s.version = v
	s.tx.touch()
	return outcome{changed: true}, nil
}

// tooNew is the error for an entry that raises the cluster version beyond
// this build, nil for any other entry.
func tooNew(index uint64, c *pb.Command) error {
	v := c.GetSetClusterVersion().GetVersion()
	if v <= CommandVersion {
		return nil
	}
	return fail(ErrVersionTooNew, "log entry %d raises the cluster version to %d; this build applies command "+
		"versions up to %d: upgrade this node to the cluster's newest release and start it again", index, v, CommandVersion)
}

// checkSnapshotVersion refuses a snapshot of a cluster that runs a version
// this build does not apply.
func checkSnapshotVersion(v uint32) error {
	if v <= CommandVersion {
		return nil
	}
	return fmt.Errorf("%w: the snapshot's cluster runs version %d; this build applies command versions up to %d: "+
		"upgrade this node to the cluster's newest release", ErrVersionTooNew, v, CommandVersion)
}

// restateV1Defaults writes into every stored spec what version 1 used where
// the spec set nothing (the history limit, the retry backoffs), so that a
// job registered before the upgrade keeps behaving as it did once version 2
// reads its stored values as they are. Version, generation and cursor stay:
// the job means what it meant.
func (s *state) restateV1Defaults() {
	var changed []jobItem
	s.jobs.Ascend(func(it jobItem) bool {
		if needsV1Defaults(it.job.GetSpec()) {
			changed = append(changed, it)
		}
		return true
	})
	for _, it := range changed {
		j := proto.CloneOf(it.job)
		spec := j.GetSpec()
		if spec.GetHistoryLimit() == 0 {
			spec.HistoryLimit = v1HistoryLimit
		}
		if r := spec.GetRetry(); r != nil {
			initial, limit := v1Backoffs(r)
			spec.Retry = &pb.Retry{MaxAttempts: r.GetMaxAttempts(),
				InitialBackoff: durationpb.New(initial), MaxBackoff: durationpb.New(limit)}
		}
		s.share.spec(spec)
		s.setJob(j, it.status)
	}
}

func needsV1Defaults(spec *pb.JobSpec) bool {
	r := spec.GetRetry()
	return spec.GetHistoryLimit() == 0 ||
		r != nil && (r.GetInitialBackoff().AsDuration() <= 0 || r.GetMaxBackoff().AsDuration() <= 0)
}

// v1Backoffs are a retry policy's backoffs as version 1 read them: an
// unset or non-positive one is 1 s initially, 1 min at most.
func v1Backoffs(r *pb.Retry) (initial, limit time.Duration) {
	initial, limit = r.GetInitialBackoff().AsDuration(), r.GetMaxBackoff().AsDuration()
	if initial <= 0 {
		initial = v1InitialBackoff
	}
	if limit <= 0 {
		limit = v1MaxBackoff
	}
	return initial, limit
}

// updatedBy is the principal a job changed by e records: none at version 1,
// which did not record one. (The audit trail, which names it too, is on
// only once every voter applies version 2: set_audit.)
func (s *state) updatedBy(e entry) string {
	if !s.atLeast(version2) {
		return ""
	}
	return e.principal
}

// headerVersion is the version a snapshot header records: none for 1, so
// that a snapshot of version 1 is exactly what the builds before versions
// wrote.
func (s *state) headerVersion() uint32 {
	if s.version <= 1 {
		return 0
	}
	return s.version
}

// backoffs are the retry policy's backoffs under the active version: the
// stored ones from version 2 on (an unset or negative one is zero).
func (s *state) backoffs(r *pb.Retry) (initial, limit time.Duration) {
	if !s.atLeast(version2) {
		return v1Backoffs(r)
	}
	return max(r.GetInitialBackoff().AsDuration(), 0), max(r.GetMaxBackoff().AsDuration(), 0)
}

// historyLimit is how many finished runs name keeps, and false when its
// history is not pruned: from version 2 on, the stored limit of its job,
// and a name without a job keeps its history; before, 10 unless the job
// set a limit, with or without a job.
func (s *state) historyLimit(name string) (int, bool) {
	j, ok := s.job(name)
	if !s.atLeast(version2) {
		if ok && j.GetSpec().GetHistoryLimit() > 0 {
			return int(j.GetSpec().GetHistoryLimit()), true
		}
		return v1HistoryLimit, true
	}
	return int(j.GetSpec().GetHistoryLimit()), ok
}
