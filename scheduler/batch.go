package scheduler

import (
	"slices"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// planned is what (part of) a tick planned, grouped by job so that a job's
// fires stay together (and in order) when it is split into fire batches.
type planned struct {
	groups []*group
	byJob  map[string]*group
}

type group struct {
	name   string
	job    *pb.Job // nil for the orphans of deleted jobs
	fires  []*pb.Fire
	misses []*pb.Miss
	adopt  []*pb.Run
	// reqs parallels fires: the trigger waiting for a fire's result.
	reqs []*triggerReq
	// quiet: planned with nothing of the job open or buffered, and fires
	// only. If all its fires are accepted, the plan's wake-up stays right
	// and the job need not be planned again until then (see fresh).
	quiet bool
	// fresh: its fires were accepted and the state checked; the job is
	// not queued for re-planning.
	fresh bool
}

func newPlanned() *planned { return &planned{byJob: make(map[string]*group)} }

// group returns the job's group, creating it at the end.
func (pl *planned) group(name string, job *pb.Job) *group {
	if g, ok := pl.byJob[name]; ok {
		if g.job == nil {
			g.job = job
		}
		return g
	}
	g := &group{name: name, job: job}
	pl.groups = append(pl.groups, g)
	pl.byJob[name] = g
	return g
}

// drop removes the groups of the jobs gone says so.
func (pl *planned) drop(gone func(name string) bool) {
	pl.groups = slices.DeleteFunc(pl.groups, func(g *group) bool {
		if !gone(g.name) {
			return false
		}
		delete(pl.byJob, g.name)
		return true
	})
}

func (pl *planned) empty() bool {
	for _, g := range pl.groups {
		if len(g.fires) > 0 || len(g.misses) > 0 || len(g.adopt) > 0 {
			return false
		}
	}
	return true
}

// names lists the planned jobs that must be planned again.
func (pl *planned) names() []string {
	out := make([]string, 0, len(pl.groups))
	for _, g := range pl.groups {
		if g.name != "" && !g.fresh {
			out = append(out, g.name)
		}
	}
	return out
}

// fireBatch is one FireBatch entry: fires and misses with, per fire, its
// job and waiting trigger.
type fireBatch struct {
	fires  []*pb.Fire
	misses []*pb.Miss
	// jobOf is the job each fire was planned from. Accepted fires run the
	// spec in their result instead; only the dispatch-before-commit
	// failpoint, which has no result, dispatches from it.
	jobOf []*pb.Job
	reqs  []*triggerReq
	// groups are the groups whose fires are in fires, in order.
	groups []*group
}

func (c *fireBatch) size() int { return len(c.fires) + len(c.misses) }

// onlyLost reports whether the batch holds nothing but re-dispatches of
// lost attempts (which planning never proposes again).
func (c *fireBatch) onlyLost() bool {
	for _, f := range c.fires {
		if f.GetLostToken() == 0 {
			return false
		}
	}
	return len(c.misses) == 0
}

func (c *fireBatch) failTriggers(err error) {
	for _, r := range c.reqs {
		if r != nil {
			r.reply(nil, err)
		}
	}
}

// batches splits the planned work into fire batches of about max fires and
// misses, never splitting a job's group (a group larger than max gets its
// own batch).
func (pl *planned) batches(max int) []*fireBatch {
	var out []*fireBatch
	cur := &fireBatch{}
	for _, g := range pl.groups {
		n := len(g.fires) + len(g.misses)
		if n == 0 {
			continue
		}
		if cur.size() > 0 && cur.size()+n > max {
			out = append(out, cur)
			cur = &fireBatch{}
		}
		if len(g.fires) > 0 {
			cur.groups = append(cur.groups, g)
		}
		cur.fires = append(cur.fires, g.fires...)
		cur.misses = append(cur.misses, g.misses...)
		for i := range g.fires {
			cur.jobOf = append(cur.jobOf, g.job)
			var req *triggerReq
			if i < len(g.reqs) {
				req = g.reqs[i]
			}
			cur.reqs = append(cur.reqs, req)
		}
	}
	if cur.size() > 0 {
		out = append(out, cur)
	}
	return out
}
