package fsm

import (
	"slices"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// RunKey is a run's place in the order ListRuns and RunsPage list runs:
// newest first by creation time, then by id. The zero key is before every
// run: a page from it starts at the newest.
type RunKey struct {
	CreatedAt int64 // the run's created_at_unix_nano
	ID        string
}

func keyOf(r *pb.Run) RunKey { return RunKey{CreatedAt: r.GetCreatedAtUnixNano(), ID: r.GetId()} }

// RunQuery selects one page of runs.
type RunQuery struct {
	// Job keeps only the runs of that name; "" keeps every run.
	Job string
	// Kind keeps only the runs of that kind (their first attempt's);
	// unspecified keeps every kind.
	Kind pb.FireKind
	// After is the last key of the previous page; only runs after it count.
	After RunKey
	// Limit caps the page; zero or less means no cap.
	Limit int
	// Selector, when set, keeps only the runs of live jobs whose labels
	// include it, and of those jobs only their own runs (history.go).
	Selector map[string]string
	// MaxScan caps the runs one call looks at, kept or not, so that a
	// selective scope never holds the read lock for a walk over the whole
	// ledger; zero or less means no cap.
	MaxScan int
}

// RunPage is one page of runs, each a copy marked job_deleted when no live
// job owns it.
type RunPage struct {
	Runs []*pb.Run
	// Next is where the next page starts when the call stopped early, else
	// the zero key: the last returned run's when more runs may follow, or
	// the last run looked at when MaxScan ran out. A page may then hold
	// fewer than Limit runs, even none.
	Next RunKey
	// Scanned is how many runs the call looked at.
	Scanned int
}

// ListRuns returns the runs of the named job ("" for every job), newest
// first by creation time, then by id, at most limit of them (zero or less
// means no cap), each marked job_deleted when no live job owns it.
func (f *FSM) ListRuns(job string, limit int) []*pb.Run {
	return f.RunsPage(RunQuery{Job: job, Limit: limit}).Runs
}

// RunsPage returns the page of runs q selects.
func (f *FSM) RunsPage(q RunQuery) RunPage {
	f.mu.RLock()
	defer f.mu.RUnlock()
	p := pager{s: &f.st, q: q}
	if q.Job != "" {
		p.ofName()
	} else {
		p.ofAll()
	}
	return p.page
}

// pager fills one page under the read lock.
type pager struct {
	s    *state
	q    RunQuery
	page RunPage
	// scope caches, per name, whether the name's live job is in q.Selector.
	scope map[string]jobScope
}

type jobScope struct {
	it jobItem
	in bool
}

// visit considers r, the next run in order, and reports whether to go on.
func (p *pager) visit(r *pb.Run) bool {
	if p.q.MaxScan > 0 && p.page.Scanned == p.q.MaxScan {
		return false // Next is the last run looked at, set below
	}
	if p.q.Limit > 0 && len(p.page.Runs) == p.q.Limit {
		if p.kept(r) {
			p.page.Next = keyOf(p.page.Runs[len(p.page.Runs)-1])
			return false
		}
	} else if p.kept(r) {
		p.page.Runs = append(p.page.Runs, p.s.view(r))
	}
	p.page.Scanned++
	p.page.Next = keyOf(r) // until the walk ends on its own
	return true
}

// kept reports whether the query keeps r.
func (p *pager) kept(r *pb.Run) bool {
	if p.q.Kind != pb.FireKind_FIRE_KIND_UNSPECIFIED && r.GetKind() != p.q.Kind {
		return false
	}
	if len(p.q.Selector) == 0 {
		return true
	}
	if p.scope == nil {
		p.scope = make(map[string]jobScope)
	}
	js, ok := p.scope[r.GetJob()]
	if !ok {
		js.it, js.in = p.s.item(r.GetJob())
		js.in = js.in && hasLabels(js.it.job.GetSpec(), p.q.Selector)
		p.scope[r.GetJob()] = js
	}
	return js.in && owns(js.it, r)
}

// ofAll walks the ledger by creation, newest first, from q.After.
func (p *pager) ofAll() {
	complete := true
	visit := func(k createdKey) bool {
		if k.at == p.q.After.CreatedAt && k.id == p.q.After.ID {
			return true
		}
		r, ok := p.s.run(k.id)
		if !ok {
			return true
		}
		complete = p.visit(r)
		return complete
	}
	if p.q.After == (RunKey{}) {
		p.s.ix.created.Descend(visit)
	} else {
		p.s.ix.created.DescendLessOrEqual(createdKey{at: p.q.After.CreatedAt, id: p.q.After.ID}, visit)
	}
	p.finish(complete)
}

// ofName walks the runs of one name, which its history limit and its open
// runs bound, newest first, from q.After.
func (p *pager) ofName() {
	var runs []*pb.Run
	p.s.runsOf(p.q.Job, func(r *pb.Run) bool {
		if p.q.After == (RunKey{}) || newerFirst(p.q.After, keyOf(r)) < 0 {
			runs = append(runs, r)
		}
		return true
	})
	slices.SortFunc(runs, func(a, b *pb.Run) int { return newerFirst(keyOf(a), keyOf(b)) })
	complete := true
	for _, r := range runs {
		if complete = p.visit(r); !complete {
			break
		}
	}
	p.finish(complete)
}

// finish clears Next when the walk went to the end.
func (p *pager) finish(complete bool) {
	if complete {
		p.page.Next = RunKey{}
	}
}

// newerFirst orders keys newest first: negative when a comes before b.
func newerFirst(a, b RunKey) int {
	switch {
	case a.CreatedAt != b.CreatedAt:
		if a.CreatedAt > b.CreatedAt {
			return -1
		}
		return 1
	case a.ID > b.ID:
		return -1
	case a.ID < b.ID:
		return 1
	}
	return 0
}
