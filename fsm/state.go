package fsm

import (
	"github.com/google/btree"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// treeDegree trades node size against depth; 32 keeps a million names about
// four levels deep.
const treeDegree = 32

// jobEntry is one registered job, keyed by name.
type jobEntry struct {
	name string
	job  *pb.Job
}

// tombstone remembers the last generation of a deleted name.
type tombstone struct {
	name       string
	generation uint64
}

func jobLess(a, b jobEntry) bool        { return a.name < b.name }
func tombstoneLess(a, b tombstone) bool { return a.name < b.name }

// state is everything the FSM replicates. Both trees are ordered by name, so
// every walk over them (list, snapshot, hash) is deterministic without
// sorting, and both are copy-on-write, so Snapshot captures them in O(1).
type state struct {
	// jobs holds one entry per registered job. A *pb.Job stored here, and
	// every message reachable from it, is never mutated after it is stored:
	// each change stores a fresh job. Snapshots share these pointers while
	// Apply goes on, and reads may clone them under a read lock only.
	jobs *btree.BTreeG[jobEntry]
	// tombstones holds deleted names with their last generation, so that a
	// re-created job starts above it. A name is never in jobs and tombstones
	// at once: creating a job consumes its tombstone.
	tombstones *btree.BTreeG[tombstone]
	// counter is the fencing-token counter: no command advances it yet, but
	// it is snapshotted and restored so that it can never go backwards.
	counter uint64
}

func newState() state {
	return state{
		jobs:       btree.NewG(treeDegree, jobLess),
		tombstones: btree.NewG(treeDegree, tombstoneLess),
	}
}

func (s *state) job(name string) (*pb.Job, bool) {
	e, ok := s.jobs.Get(jobEntry{name: name})
	return e.job, ok
}

func (s *state) storeJob(j *pb.Job) {
	s.jobs.ReplaceOrInsert(jobEntry{name: j.GetSpec().GetName(), job: j})
}

func (s *state) lastGeneration(name string) uint64 {
	t, _ := s.tombstones.Get(tombstone{name: name})
	return t.generation
}

// capture returns a copy of s that later changes to s do not affect. It
// writes to the trees' copy-on-write bookkeeping, so it needs the write lock.
func (s *state) capture() state {
	return state{jobs: s.jobs.Clone(), tombstones: s.tombstones.Clone(), counter: s.counter}
}
