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
// The plan stands while the job is the very value planning read (the FSM
// replaces it on every write), its status is what the accepted fires made
// of it (the cursor at the newest fired slot, nothing buffered, open
// exactly the runs just created, the newest token the fires' last) and
// every attempt of the fire is still in hand: an outcome that leaves its
// run open (RETRYING) changes no status, so the tokens are checked too.
// It is checked when the job comes up for re-planning, not at the commit:
// reading the state then would wait for the FSM to apply the tick's next
// entry before this one's attempts could be dispatched.
type freshPlan struct {
	job    *pb.Job
	cursor int64
	runs   []string
	tokens []uint64
}

// still reports whether the plan is still right for e at now: its
// wake-up, still in the heap, has not come yet.
func (f freshPlan) still(l *leader, name string, sj fsm.StoredJob, now time.Time) bool {
	if at, ok := l.heap.when(name); !ok || at <= now.UnixNano() || sj.Job != f.job {
		return false
	}
	st := sj.Status
	if st.GetCursorUnix() != f.cursor || st.GetBufferedSlotUnix() != 0 ||
		st.GetLatestToken() != f.tokens[len(f.tokens)-1] || len(st.GetOpenRunIds()) != len(f.runs) {
		return false
	}
	for _, id := range f.runs {
		if !slices.Contains(st.GetOpenRunIds(), id) {
			return false
		}
	}
	for _, t := range f.tokens {
		if !l.isKnown(t) {
			return false
		}
	}
	return true
}

// noteFresh records the quiet groups of a committed fire batch whose fires
// were all accepted as first attempts of scheduled slots.
func (l *leader) noteFresh(c *fireBatch, res *pb.CommandResult) {
	i := 0
	for _, g := range c.groups {
		from := i
		i += len(g.fires)
		if !g.quiet || g.job == nil || len(g.fires) == 0 {
			continue
		}
		if f, ok := freshFor(g, c.fires[from:i], c.reqs[from:i], res.GetFires()[from:i]); ok {
			l.fresh[g.name] = f
			g.fresh = true
		}
	}
}

// freshFor is the plan that stands for g's fires, if they were all
// accepted as scheduled, untriggered first attempts.
func freshFor(g *group, fires []*pb.Fire, reqs []*triggerReq, results []*pb.FireResult) (freshPlan, bool) {
	f := freshPlan{job: g.job, runs: make([]string, 0, len(fires)), tokens: make([]uint64, 0, len(fires))}
	for k, fire := range fires {
		r := results[k]
		if reqs[k] != nil || !r.GetAccepted() || fire.GetKind() != pb.FireKind_FIRE_KIND_SCHEDULED || r.GetAttempt() != 1 {
			return freshPlan{}, false
		}
		id := r.GetRunId()
		if r.GetRun() != nil {
			id = r.GetRun().GetId()
		}
		f.runs = append(f.runs, id)
		f.tokens = append(f.tokens, r.GetToken())
		f.cursor = max(f.cursor, fire.GetSlotUnix())
	}
	return f, true
}
