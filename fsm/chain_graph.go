package fsm

import (
	"fmt"
	"slices"
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// dependents is derived from the stored specs: for each name, the jobs
// whose after names it, in name order. A name may have dependents without
// being a job (after_missing wait, or a parent deleted with force). Restore
// rebuilds it while it reads the jobs; only Apply and Restore change it.
type dependents map[string][]string

// link records that child runs after each job of after.
func (d dependents) link(child string, after []*pb.Dependency) {
	for _, dep := range after {
		kids := d[dep.GetJob()]
		if i, found := slices.BinarySearch(kids, child); !found {
			d[dep.GetJob()] = slices.Insert(kids, i, child)
		}
	}
}

// unlink forgets that child runs after each job of after.
func (d dependents) unlink(child string, after []*pb.Dependency) {
	for _, dep := range after {
		kids := d[dep.GetJob()]
		if i, found := slices.BinarySearch(kids, child); found {
			kids = slices.Delete(slices.Clone(kids), i, i+1)
			if len(kids) == 0 {
				delete(d, dep.GetJob())
			} else {
				d[dep.GetJob()] = kids
			}
		}
	}
}

// parentNames lists the jobs of after in order.
func parentNames(after []*pb.Dependency) []string {
	names := make([]string, len(after))
	for i, d := range after {
		names[i] = d.GetJob()
	}
	return names
}

// sameParents reports whether two after lists name the same jobs: the
// graph is then what it was, whatever else changed.
func sameParents(a, b []*pb.Dependency) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true // the put of nearly every job
	}
	x, y := parentNames(a), parentNames(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// chainLimits are the bounds a put carries (PutJobCommand), 0 meaning none.
type chainLimits struct {
	depth, fanout int
}

// checkGraph applies the rules between jobs to a put of spec over old (nil
// for a create), by a caller whose scope is sel: every parent it adds must
// be a job the caller can read (unless after_missing is wait, for a name no
// job holds), and the graph must stay acyclic, within the depth and the
// fan-out. A put that names the same parents as the stored spec changes
// no edge and passes. Below cluster version 3 no job may have dependencies.
func (s *state) checkGraph(spec, old *pb.JobSpec, sel map[string]string, lim chainLimits) error {
	after := spec.GetAfter()
	if len(after) > 0 && !s.atLeast(ChainsVersion) {
		return fail(ErrInvalid, "after: job %q cannot run after other jobs until every node runs a release of "+
			"command version %d (cluster version %d)", spec.GetName(), ChainsVersion, s.version)
	}
	if sameParents(after, old.GetAfter()) {
		return nil
	}
	before := make(map[string]bool, len(old.GetAfter()))
	for _, d := range old.GetAfter() {
		before[d.GetJob()] = true
	}
	name := spec.GetName()
	for i, d := range after {
		if before[d.GetJob()] {
			continue
		}
		if err := s.checkParent(d.GetJob(), i, spec.GetAfterMissing(), sel); err != nil {
			return err
		}
		if n := len(s.deps[d.GetJob()]); lim.fanout > 0 && n >= lim.fanout {
			return fail(ErrDependency, "after[%d].job: %d jobs already run after %q, the most one job may have "+
				"(--max-chain-fanout %d)", i, n, d.GetJob(), lim.fanout)
		}
	}
	if cycle := s.cycleThrough(name, after); cycle != nil {
		return fail(ErrDependency, "after: job %q would close a cycle: %s (each runs after the one before it)",
			name, strings.Join(cycle, " → "))
	}
	if lim.depth > 0 {
		if depth := s.ancestry(name, after) + s.descent(name) - 1; depth > lim.depth {
			return fail(ErrDependency, "after: job %q would be in a chain of %d jobs, longer than %d (--max-chain-depth)",
				name, depth, lim.depth)
		}
	}
	return nil
}

// checkParent checks one parent a put adds: a job the caller can read, or
// a name no job holds when the child waits for it.
func (s *state) checkParent(parent string, i int, missing pb.AfterMissing, sel map[string]string) error {
	p, ok := s.job(parent)
	switch {
	case ok && hasLabels(p.GetSpec(), sel):
		return nil
	case !ok && missing == pb.AfterMissing_AFTER_MISSING_WAIT:
		return nil
	case ok:
		// Outside the caller's scope, it reads as missing, as for every
		// other call; waiting for it would reveal when it runs.
		return fail(ErrNotFound, "after[%d].job: job %q not found", i, parent)
	}
	return fail(ErrNotFound, "after[%d].job: job %q not found (set after_missing: wait to wait for it)", i, parent)
}

// cycleThrough returns the cycle that giving job name the dependencies
// after would close, in run order (name first and last), or nil: name is
// among the ancestors its new parents reach through the stored specs.
func (s *state) cycleThrough(name string, after []*pb.Dependency) []string {
	// from[p] is the job whose after named p first in the walk: following
	// it back from name gives the path.
	from := map[string]string{}
	stack := make([]string, 0, len(after))
	for i := len(after) - 1; i >= 0; i-- {
		p := after[i].GetJob()
		if _, seen := from[p]; !seen {
			from[p] = name
			stack = append(stack, p)
		}
	}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if cur == name {
			// from[name] runs after name, from[from[name]] after it, ...,
			// and name after the last: that is the run order.
			path := []string{name}
			for p := from[name]; p != name; p = from[p] {
				path = append(path, p)
			}
			return append(path, name)
		}
		j, ok := s.job(cur)
		if !ok {
			continue
		}
		deps := j.GetSpec().GetAfter()
		for i := len(deps) - 1; i >= 0; i-- {
			p := deps[i].GetJob()
			if _, seen := from[p]; !seen {
				from[p] = cur
				stack = append(stack, p)
			}
		}
	}
	return nil
}

// ancestry is the length, in jobs, of the longest chain that ends at name
// given the dependencies after: 1 for a job without parents. The graph
// above name is acyclic (cycleThrough checked it).
func (s *state) ancestry(name string, after []*pb.Dependency) int {
	memo := map[string]int{}
	var up func(string, []*pb.Dependency) int
	up = func(n string, deps []*pb.Dependency) int {
		if v, ok := memo[n]; ok {
			return v
		}
		longest := 0
		for _, d := range deps {
			j, _ := s.job(d.GetJob())
			longest = max(longest, up(d.GetJob(), j.GetSpec().GetAfter()))
		}
		memo[n] = longest + 1
		return longest + 1
	}
	return up(name, after)
}

// descent is the length, in jobs, of the longest chain that starts at
// name: 1 for a job nothing depends on.
func (s *state) descent(name string) int {
	memo := map[string]int{}
	var down func(string) int
	down = func(n string) int {
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = 1 // a cycle would stop here; the put refused it already
		longest := 0
		for _, c := range s.deps[n] {
			longest = max(longest, down(c))
		}
		memo[n] = longest + 1
		return longest + 1
	}
	return down(name)
}

// checkDelete refuses to delete a job others depend on, naming them, unless
// force: their dependency on it then reads as never met. A caller with a
// selector is told the names of those in its scope, and how many others.
func (s *state) checkDelete(name string, force bool, sel map[string]string) error {
	kids := s.deps[name]
	if len(kids) == 0 || force {
		return nil
	}
	var seen []string
	hidden := 0
	for _, k := range kids {
		if j, ok := s.job(k); ok && hasLabels(j.GetSpec(), sel) {
			seen = append(seen, k)
		} else {
			hidden++
		}
	}
	who := strings.Join(seen, ", ")
	if hidden > 0 {
		if who != "" {
			who += " and "
		}
		who += fmt.Sprintf("%d jobs outside the caller's scope", hidden)
	}
	return fail(ErrDependency, "job %q is a parent (after) of %s: delete or change them first, or delete with force "+
		"(their dependency on it then reads as never met)", name, who)
}

// setDependencies keeps the derived index and the job's pending parents in
// step with a put that changes its after from old's to spec's: a pending
// run of a parent it no longer names, or that the dependency on that
// parent no longer takes (on changed), goes. st is the job's status,
// returned as is or fresh.
func (s *state) setDependencies(spec, old *pb.JobSpec, st *pb.JobStatus) *pb.JobStatus {
	if !sameParents(spec.GetAfter(), old.GetAfter()) {
		s.deps.unlink(spec.GetName(), old.GetAfter())
		s.deps.link(spec.GetName(), spec.GetAfter())
	}
	if len(st.GetPendingParents()) == 0 {
		return st
	}
	kept := slices.DeleteFunc(slices.Clone(st.GetPendingParents()), func(r *pb.RunRef) bool {
		d := dependencyOn(spec, r.GetJob())
		return d == nil || !qualifies(d.GetOn(), r.GetState())
	})
	if len(kept) == len(st.GetPendingParents()) {
		return st
	}
	next := copyStatus(st)
	next.PendingParents = kept
	return next
}

// orphanDependents is the delete of name seen from its dependents: what of
// it they were waiting for goes, so that their dependency on it reads as
// never met (until a job of that name runs). They keep naming it.
func (s *state) orphanDependents(name string) {
	for _, k := range s.deps[name] {
		it, ok := s.item(k)
		i := pendingOf(it.status, name)
		if !ok || i < 0 {
			continue
		}
		next := copyStatus(it.status)
		next.PendingParents = slices.Delete(slices.Clone(next.PendingParents), i, i+1)
		s.setStatus(it, next)
	}
}

// dependencyOn is the dependency of spec on the job parent, or nil.
func dependencyOn(spec *pb.JobSpec, parent string) *pb.Dependency {
	for _, d := range spec.GetAfter() {
		if d.GetJob() == parent {
			return d
		}
	}
	return nil
}

// pendingOf is the index of parent's run among st's pending parents, or -1.
func pendingOf(st *pb.JobStatus, parent string) int {
	return slices.IndexFunc(st.GetPendingParents(), func(r *pb.RunRef) bool { return r.GetJob() == parent })
}
