package fsm

import (
	"github.com/google/btree"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// treeDegree trades node size against depth; 32 keeps a million names about
// four levels deep.
const treeDegree = 32

// jobItem is one registered job and its run-side status, keyed by name.
// The status lives beside the job rather than inside it so that a fire,
// which moves the cursor on every slot, stores a small fresh status and
// leaves the job itself alone.
type jobItem struct {
	name   string
	job    *pb.Job // Status is always nil here: the status is the field below
	status *pb.JobStatus
}

// tombstone remembers the last generation of a deleted name.
type tombstone struct {
	name       string
	generation uint64
}

// runItem is one run of the ledger, keyed by id.
type runItem struct {
	id  string
	run *pb.Run
}

func jobLess(a, b jobItem) bool         { return a.name < b.name }
func tombstoneLess(a, b tombstone) bool { return a.name < b.name }
func runLess(a, b runItem) bool         { return a.id < b.id }

// state is everything the FSM replicates, plus indexes derived from it.
//
// The replicated part — jobs (with their statuses), tombstones, runs and the
// counter — lives in copy-on-write trees ordered by key, so every walk over
// them (list, snapshot, hash) is deterministic without sorting and Snapshot
// captures them in O(1).
//
// The derived part — the open-run index, the creation-order index and the
// per-name history — is a pure function of the runs: Restore rebuilds it,
// Snapshot and StateHash ignore it, and only Apply and Restore (under the
// write lock) change it.
type state struct {
	// jobs holds one item per registered job. A *pb.Job or *pb.JobStatus
	// stored here, and every message reachable from them, is never mutated
	// after it is stored: each change stores fresh values. Snapshots and
	// StoredJobs share these pointers while Apply goes on, and reads
	// may clone them under a read lock only.
	//
	// Invariant: a status's cursor never decreases while its job lives.
	jobs *btree.BTreeG[jobItem]
	// tombstones holds deleted names with their last generation, so that a
	// re-created job starts above it. A name is never in jobs and tombstones
	// at once: creating a job consumes its tombstone. A tombstone is
	// collected once no run of its name is open (tombstone.go).
	tombstones *btree.BTreeG[tombstone]
	// retired is the highest generation of any collected tombstone. A name
	// without a tombstone starts above it, so generations stay monotonic
	// per name while deleted names cost nothing.
	retired uint64
	// runs is the run ledger: every open run and the newest finished runs of
	// each name. Stored runs, their attempts and everything reachable from
	// them are immutable like jobs: a change stores a new *pb.Run, which may
	// share the unchanged attempts of the old one.
	//
	// Invariants: an open run (DISPATCHED or RETRYING) has at least one
	// attempt and is never pruned; a run listed in a status's open_run_ids
	// is open and of that job; a finished run never changes again. An
	// outcome is accepted only for a run's current attempt, by its token,
	// while that attempt is DISPATCHED: a late report of a superseded,
	// cancelled or already reported attempt changes nothing.
	runs *btree.BTreeG[runItem]
	// counter is the fencing-token counter. It advances by one for each
	// accepted attempt and for nothing else, so a token is issued only to an
	// attempt that was accepted, and tokens strictly increase in log order.
	// It is snapshotted and restored so it never goes backwards.
	counter uint64
	// acl holds the ACL tokens; see acl.go.
	acl aclState
	// audit is the audit trail; see audit.go.
	audit auditTrail
	// version is the active cluster version, at least 1: the rules by which
	// the kinds of earlier versions apply (clusterversion.go).
	version uint32
	// tally counts what runs did per minute of the last hour (tally.go).
	tally runTally
	// secrets holds the secret store, values sealed; see secret.go.
	secrets secretState
	// cals holds the calendars (calendar.go), freezes the freezes
	// (freeze.go).
	cals    calendarState
	freezes freezeState
	// alerts holds channels, notify rules, alerts and episodes; see
	// alert.go.
	alerts alertState

	// ix holds the derived indexes; see ledger.go.
	ix *indexes
	// deps is derived from the stored specs: who runs after whom
	// (chain_graph.go). Restore rebuilds it as it reads the jobs.
	deps dependents
	// share lets new stored jobs share equal values; see share.go. Only
	// Apply and Restore, under the write lock, use it.
	share *sharer
	// tx collects what the entry being applied changed; nil outside Apply.
	tx *changes
	// applying is the proposer's time of the entry being applied (Unix
	// ns): when it committed what it changed, for the tally.
	applying int64
}

func newState() state {
	return state{
		jobs:       btree.NewG(treeDegree, jobLess),
		tombstones: btree.NewG(treeDegree, tombstoneLess),
		runs:       btree.NewG(treeDegree, runLess),
		acl:        newACLState(),
		audit:      newAuditTrail(),
		secrets:    newSecretState(),
		cals:       newCalendarState(),
		freezes:    newFreezeState(),
		alerts:     newAlertState(),
		version:    1,
		ix:         newIndexes(),
		deps:       dependents{},
		share:      newSharer(),
	}
}

func (s *state) item(name string) (jobItem, bool) {
	return s.jobs.Get(jobItem{name: name})
}

func (s *state) job(name string) (*pb.Job, bool) {
	it, ok := s.item(name)
	return it.job, ok
}

// setJob stores a job and its status; j and st must be fresh or already stored
// values, never ones that anything will change later.
func (s *state) setJob(j *pb.Job, st *pb.JobStatus) {
	name := j.GetSpec().GetName()
	s.jobs.ReplaceOrInsert(jobItem{name: name, job: j, status: st})
	s.tx.jobChanged(name)
}

// setStatus replaces the status of a live job.
func (s *state) setStatus(it jobItem, st *pb.JobStatus) {
	if it.status.GetDeferredSlotUnix() != st.GetDeferredSlotUnix() {
		s.freezes.hold(it.name, st)
	}
	s.setJob(it.job, st)
}

// lastGeneration is the generation a new job of name continues after: its
// tombstone's, or for a name without one the highest ever retired.
func (s *state) lastGeneration(name string) uint64 {
	if t, ok := s.tombstones.Get(tombstone{name: name}); ok {
		return t.generation
	}
	return s.retired
}

func (s *state) run(id string) (*pb.Run, bool) {
	it, ok := s.runs.Get(runItem{id: id})
	return it.run, ok
}

// nextToken issues the next fencing token. Call it only for an attempt that
// is being accepted.
func (s *state) nextToken() uint64 {
	s.counter++
	s.tx.touch()
	return s.counter
}

// capture returns a copy of the replicated part of s that later changes to
// s do not affect. It writes to the trees' copy-on-write bookkeeping, so it
// needs the write lock. The copy carries no derived indexes: it is only
// walked, never applied to.
func (s *state) capture() state {
	return state{
		jobs:       s.jobs.Clone(),
		tombstones: s.tombstones.Clone(),
		runs:       s.runs.Clone(),
		counter:    s.counter,
		retired:    s.retired,
		acl:        s.acl.capture(),
		audit:      s.audit.capture(),
		version:    s.version,
		tally:      s.tally,
		secrets:    s.secrets.capture(),
		cals:       s.cals.capture(),
		freezes:    s.freezes.capture(),
		alerts:     s.alerts.capture(),
	}
}
