package fsm

import (
	"slices"
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Dependents lists the jobs whose after names name, in name order.
func (f *FSM) Dependents(name string) []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Clone(f.st.deps[name])
}

// ChildRuns lists the runs that name the run id among their parents: the
// runs its outcome fired, or the records of the sets it was part of that
// did not fire (skipped, missed), oldest first per job, jobs in name order.
// Only runs still in the ledger are found.
func (f *FSM) ChildRuns(id string) []*pb.RunRef {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.run(id)
	if !ok {
		return nil
	}
	var out []*pb.RunRef
	for _, child := range f.st.deps[r.GetJob()] {
		f.st.runsOf(child, func(c *pb.Run) bool {
			if slices.ContainsFunc(c.GetParents(), func(p *pb.RunRef) bool { return p.GetRunId() == id }) {
				out = append(out, &pb.RunRef{Job: c.GetJob(), RunId: c.GetId(), Token: CurrentAttempt(c).GetToken(),
					State: c.GetState(), FinishedAtUnixNano: c.GetFinishedAtUnixNano()})
			}
			return true
		})
	}
	return out
}

// GraphJob is one job of the dependency graph.
type GraphJob struct {
	Name string
	// Job is the job with its status; nil when no job of the name is in
	// the caller's scope (missing, or outside it): another job's after
	// names it.
	Job *pb.Job
	// Children are the jobs in scope whose after names it, by name.
	Children []string
}

// Graph returns the job name with every job above and below it through
// after, or with name empty every job that has dependencies or dependents,
// in name order; false if name is not a job in the scope sel. A job outside
// the scope is shown as missing, and the walk does not go through it.
func (f *FSM) Graph(name string, sel map[string]string) ([]GraphJob, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := &f.st
	visible := func(n string) (jobItem, bool) {
		it, ok := s.item(n)
		return it, ok && hasLabels(it.job.GetSpec(), sel)
	}
	names := map[string]bool{}
	if name == "" {
		for parent, kids := range s.deps {
			names[parent] = true
			for _, k := range kids {
				names[k] = true
			}
		}
	} else {
		if _, ok := visible(name); !ok {
			return nil, false
		}
		s.walkGraph(name, names, visible)
	}
	out := make([]GraphJob, 0, len(names))
	for n := range names {
		g := GraphJob{Name: n}
		if it, ok := visible(n); ok {
			g.Job = cloneJob(it.job, it.status)
		}
		for _, k := range s.deps[n] {
			if _, ok := visible(k); ok {
				g.Children = append(g.Children, k)
			}
		}
		if g.Job == nil && len(g.Children) == 0 {
			continue // neither shown nor named by anything shown
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b GraphJob) int { return strings.Compare(a.Name, b.Name) })
	return out, true
}

// walkGraph adds to names every job reachable from name up through the
// after lists and down through the dependents, going through visible jobs
// only.
func (s *state) walkGraph(name string, names map[string]bool, visible func(string) (jobItem, bool)) {
	up, down := []string{name}, []string{name}
	names[name] = true
	for len(up) > 0 {
		n := up[len(up)-1]
		up = up[:len(up)-1]
		it, ok := visible(n)
		if !ok {
			continue
		}
		for _, d := range it.job.GetSpec().GetAfter() {
			if !names[d.GetJob()] {
				names[d.GetJob()] = true
				up = append(up, d.GetJob())
			}
		}
	}
	seen := map[string]bool{name: true}
	for len(down) > 0 {
		n := down[len(down)-1]
		down = down[:len(down)-1]
		for _, k := range s.deps[n] {
			if _, ok := visible(k); ok && !seen[k] {
				seen[k], names[k] = true, true
				down = append(down, k)
			}
		}
	}
}

// CheckDependencies applies the rules between jobs that a put of spec by a
// caller of scope sel, with the put's chain limits, meets on this node's
// state (checkGraph): the API's answer before it proposes anything. The
// put's Apply decides.
func (f *FSM) CheckDependencies(spec *pb.JobSpec, sel map[string]string, depth, fanout uint32) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	old, _ := f.st.job(spec.GetName())
	return f.st.checkGraph(spec, old.GetSpec(), sel, chainLimits{depth: int(depth), fanout: int(fanout)})
}
