package scheduler

import (
	"slices"
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// freshPlan spares a job the re-plan its own accepted fire would cause.
// The FireBatch that records a fire changes the job's status, so the FSM
// reports the job changed; but when nothing of the job was open before,
// planning it again right after finds only the new run, which this leader
// holds, and the same next slot the first plan already put in the heap.
//
// The plan stands while the job's stored spec and status are the very
// values read right after the commit (the FSM replaces them on every
// write) and every attempt of the fire is still in hand: an outcome that
// leaves its run open (RETRYING) changes no status, so the tokens are
// checked too.
type freshPlan struct {
	job    *pb.Job
	status *pb.JobStatus
	tokens []uint64
}

// still reports whether the plan is still right for e at now: its
// wake-up, still in the heap, has not come yet.
func (f freshPlan) still(l *leader, name string, sj fsm.StoredJob, now time.Time) bool {
	if at, ok := l.heap.when(name); !ok || at <= now.UnixNano() || sj.Job != f.job || sj.Status != f.status {
		return false
	}
	for _, t := range f.tokens {
		if !l.isKnown(t) {
			return false
		}
	}
	return true
}

// noteFresh records the quiet groups of a committed fire batch whose fires
// were all accepted, before any of them is dispatched: until then no
// outcome of theirs can change the state read here.
func (l *leader) noteFresh(c *fireBatch, res *pb.CommandResult) {
	i := 0
	for _, g := range c.groups {
		from := i
		i += len(g.fires)
		if !g.quiet || g.job == nil {
			continue
		}
		if f, ok := l.freshFor(g, c.fires[from:i], c.reqs[from:i], res.GetFires()[from:i]); ok {
			l.fresh[g.name] = f
			g.fresh = true
		}
	}
}

// freshFor checks that the job's state is exactly what its accepted fires
// made of it: the same spec, the cursor at the newest fired slot, nothing
// buffered, and open exactly the runs just created.
func (l *leader) freshFor(g *group, fires []*pb.Fire, reqs []*triggerReq, results []*pb.FireResult) (freshPlan, bool) {
	var cursor int64
	ids := make([]string, 0, len(fires))
	tokens := make([]uint64, 0, len(fires))
	for k, f := range fires {
		r := results[k]
		if reqs[k] != nil || !r.GetAccepted() || f.GetKind() != pb.FireKind_FIRE_KIND_SCHEDULED {
			return freshPlan{}, false
		}
		id := r.GetRunId()
		if r.GetRun() != nil {
			id = r.GetRun().GetId()
		}
		ids = append(ids, id)
		tokens = append(tokens, r.GetToken())
		cursor = max(cursor, f.GetSlotUnix())
	}
	sj, err := l.s.state.StoredJob(g.name)
	if err != nil || sj.Job != g.job {
		return freshPlan{}, false
	}
	st := sj.Status
	if st.GetCursorUnix() != cursor || st.GetBufferedSlotUnix() != 0 || len(st.GetOpenRunIds()) != len(ids) {
		return freshPlan{}, false
	}
	for _, id := range ids {
		if !slices.Contains(st.GetOpenRunIds(), id) {
			return freshPlan{}, false
		}
	}
	return freshPlan{job: sj.Job, status: st, tokens: tokens}, true
}
