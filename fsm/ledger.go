package fsm

import (
	"slices"
	"strconv"

	"github.com/google/btree"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// openKey orders the open runs as OpenRuns lists them.
type openKey struct {
	job  string
	slot int64
	id   string
}

func openLess(a, b openKey) bool {
	if a.job != b.job {
		return a.job < b.job
	}
	if a.slot != b.slot {
		return a.slot < b.slot
	}
	return a.id < b.id
}

// createdKey orders all runs by creation, for ListRuns over every job.
type createdKey struct {
	at int64
	id string
}

func createdLess(a, b createdKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

// finished is one run of a name's history.
type finished struct {
	at int64 // the run's finished_at
	id string
}

func (a finished) before(b finished) bool {
	return a.at < b.at || (a.at == b.at && a.id < b.id)
}

// indexes are derived from the runs and rebuilt by Restore, so they need no
// copy-on-write: only Apply and Restore change them, under the write lock.
type indexes struct {
	// open holds every run in state DISPATCHED or RETRYING.
	open *btree.BTreeG[openKey]
	// created holds every run in the ledger.
	created *btree.BTreeG[createdKey]
	// history holds, per job name, the finished runs still in the ledger,
	// oldest first by (finished_at, id). The order is a function of the runs
	// alone — not of the order they finished in — so a node that restored a
	// snapshot prunes exactly as one that applied the whole log, even if
	// proposers' clocks went backwards. Pruning drops from the front.
	// Only looked up by name, never iterated.
	history map[string][]finished
}

func newIndexes() *indexes {
	return &indexes{
		open:    btree.NewG(treeDegree, openLess),
		created: btree.NewG(treeDegree, createdLess),
		history: map[string][]finished{},
	}
}

// CurrentAttempt is the run's current attempt: its last, the only one
// that may still take an outcome. It is nil for a MISSED record, which has
// none.
func CurrentAttempt(r *pb.Run) *pb.Attempt {
	atts := r.GetAttempts()
	if len(atts) == 0 {
		return nil
	}
	return atts[len(atts)-1]
}

func isOpen(st pb.RunState) bool {
	return st == pb.RunState_RUN_STATE_DISPATCHED || st == pb.RunState_RUN_STATE_RETRYING
}

// putRun stores r, replacing the run with its id if there is one, and keeps
// the indexes in step. A run that finishes goes to its name's history, which
// is then pruned. A run's id, job, slot and creation time never change.
func (s *state) putRun(r *pb.Run) {
	old, had := s.runs.ReplaceOrInsert(runItem{id: r.GetId(), run: r})
	s.indexRun(old, had, r)
}

// putNewRun stores r, a run just created, under newRunID(base), and sets
// its id: it inserts under base at once and looks further only if base
// was taken, which it nearly never is. That is one walk of the run tree
// per fire instead of two (a lookup, then the insert), on every node.
func (s *state) putNewRun(r *pb.Run, base string) {
	r.Id = base
	if old, had := s.runs.ReplaceOrInsert(runItem{id: base, run: r}); had {
		s.runs.ReplaceOrInsert(old) // base is old's: keep it there
		r.Id = s.newRunID(base)
		s.runs.ReplaceOrInsert(runItem{id: r.Id, run: r})
	}
	s.indexRun(runItem{}, false, r)
}

// indexRun updates what derives from the run tree once r replaced old
// (had) or was added: the observer's changes, the tallies, the indexes,
// a finished run's history.
func (s *state) indexRun(old runItem, had bool, r *pb.Run) {
	s.tx.runChanged(r)
	s.countRun(old.run, had, r)
	if !had {
		s.ix.created.ReplaceOrInsert(createdKey{at: r.GetCreatedAtUnixNano(), id: r.GetId()})
	}
	wasOpen, nowOpen := had && isOpen(old.run.GetState()), isOpen(r.GetState())
	key := openKey{job: r.GetJob(), slot: r.GetSlotUnix(), id: r.GetId()}
	switch {
	case nowOpen && !wasOpen:
		s.ix.open.ReplaceOrInsert(key)
	case !nowOpen && (wasOpen || !had):
		if wasOpen {
			s.ix.open.Delete(key)
		}
		s.addHistory(r)
		s.alertOnFinish(r)
		s.pruneHistory(r.GetJob())
		if wasOpen && s.atLeast(version2) {
			s.collectTombstone(r.GetJob()) // the last open run of a deleted job
		}
	}
}

func (s *state) addHistory(r *pb.Run) {
	f := finished{at: r.GetFinishedAtUnixNano(), id: r.GetId()}
	h := s.ix.history[r.GetJob()]
	i := len(h)
	for i > 0 && f.before(h[i-1]) { // almost always appends
		i--
	}
	s.ix.history[r.GetJob()] = slices.Insert(h, i, f)
}

// pruneHistory deletes the oldest finished runs of name beyond the
// history_limit of its job. The limit is the stored one (the API stores it
// filled in), so the FSM keeps no default. A name without a job is not
// pruned: its history stays as its job left it, plus the runs that were
// still executing when it was deleted, until a job of that name is created
// again and its own limit applies. (Cluster version 1 differs: historyLimit.)
func (s *state) pruneHistory(name string) {
	limit, ok := s.historyLimit(name)
	if !ok {
		return
	}
	h := s.ix.history[name]
	if len(h) <= limit {
		return
	}
	drop := len(h) - limit
	for _, f := range h[:drop] {
		if it, ok := s.runs.Delete(runItem{id: f.id}); ok {
			s.ix.created.Delete(createdKey{at: it.run.GetCreatedAtUnixNano(), id: f.id})
		}
	}
	clear(h[:drop]) // let the ids go
	s.ix.history[name] = h[drop:]
	s.tx.touch()
}

// owner is the live job a run is open for. A run has none once it finished,
// or when the job that opened it was deleted (even if a job of the same name
// was created since: that one did not open it).
func (s *state) owner(r *pb.Run) (jobItem, bool) {
	it, ok := s.item(r.GetJob())
	if !ok || !slices.Contains(it.status.GetOpenRunIds(), r.GetId()) {
		return jobItem{}, false
	}
	return it, true
}

// newRunID returns base, or base with a "~n" suffix if base is taken: a job
// name may contain "-m", so "<job>-<token>" of one job could equal
// "<job>-m<index>-<i>" of another. Names never contain "~".
func (s *state) newRunID(base string) string {
	if !s.runs.Has(runItem{id: base}) {
		return base
	}
	for n := 1; ; n++ {
		id := base + "~" + strconv.Itoa(n)
		if !s.runs.Has(runItem{id: id}) {
			return id
		}
	}
}

// runsOf calls fn with every run of the name still in the ledger, finished
// ones first, until fn returns false.
func (s *state) runsOf(name string, fn func(*pb.Run) bool) {
	for _, f := range s.ix.history[name] {
		if r, ok := s.run(f.id); ok && !fn(r) {
			return
		}
	}
	s.ix.open.AscendGreaterOrEqual(openKey{job: name, slot: minInt64}, func(k openKey) bool {
		if k.job != name {
			return false
		}
		r, ok := s.run(k.id)
		return !ok || fn(r)
	})
}

const minInt64 = -1 << 63

// rebuildIndexes derives the indexes from the runs, for Restore.
func (s *state) rebuildIndexes() {
	s.ix = newIndexes()
	s.runs.Ascend(func(it runItem) bool {
		r := it.run
		s.ix.created.ReplaceOrInsert(createdKey{at: r.GetCreatedAtUnixNano(), id: r.GetId()})
		if isOpen(r.GetState()) {
			s.ix.open.ReplaceOrInsert(openKey{job: r.GetJob(), slot: r.GetSlotUnix(), id: r.GetId()})
		} else {
			s.ix.history[r.GetJob()] = append(s.ix.history[r.GetJob()], finished{at: r.GetFinishedAtUnixNano(), id: r.GetId()})
		}
		return true
	})
	for _, h := range s.ix.history {
		slices.SortFunc(h, func(a, b finished) int {
			switch {
			case a.before(b):
				return -1
			case b.before(a):
				return 1
			}
			return 0
		})
	}
}
