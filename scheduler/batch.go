package scheduler

import pb "github.com/raftcron/raftcron/proto/raftcron/v1"

// batch is everything one tick proposes, grouped by job so that a job's
// fires stay together (and in order) when the tick is split into entries.
type batch struct {
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

func newBatch() *batch { return &batch{byJob: make(map[string]*group)} }

// group returns the job's group, creating it at the end of the batch.
func (b *batch) group(name string, job *pb.Job) *group {
	if g, ok := b.byJob[name]; ok {
		if g.job == nil {
			g.job = job
		}
		return g
	}
	g := &group{name: name, job: job}
	b.groups = append(b.groups, g)
	b.byJob[name] = g
	return g
}

func (b *batch) empty() bool {
	for _, g := range b.groups {
		if len(g.fires) > 0 || len(g.misses) > 0 || len(g.adopt) > 0 {
			return false
		}
	}
	return true
}

// names lists the batch's jobs that must be planned again.
func (b *batch) names() []string {
	out := make([]string, 0, len(b.groups))
	for _, g := range b.groups {
		if g.name != "" && !g.fresh {
			out = append(out, g.name)
		}
	}
	return out
}

// chunk is one FireBatch entry: fires and misses with, per fire, its job
// and waiting trigger.
type chunk struct {
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

func (c *chunk) size() int { return len(c.fires) + len(c.misses) }

func (c *chunk) failTriggers(err error) {
	for _, r := range c.reqs {
		if r != nil {
			r.reply(nil, err)
		}
	}
}

// chunks splits the batch into entries of about max fires and misses,
// never splitting a job's group (a group larger than max gets its own
// entry).
func (b *batch) chunks(max int) []*chunk {
	var out []*chunk
	cur := &chunk{}
	for _, g := range b.groups {
		n := len(g.fires) + len(g.misses)
		if n == 0 {
			continue
		}
		if cur.size() > 0 && cur.size()+n > max {
			out = append(out, cur)
			cur = &chunk{}
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
