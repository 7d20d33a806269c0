package scheduler

import (
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/failpoint"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// chained takes the runs an entry fired or recorded for jobs that run
// after others (fsm chain.go). Their attempts are this term's, committed
// with the parents' outcomes: the next plan of each job finds them open
// and not in hand, and adopts them (adopt.go), as it would an attempt
// whose entry committed after its proposal failed. An entry this node
// proposed is not heard back through the observer when it is a
// FireBatch, so the jobs are marked here.
func (l *leader) chained(runs []*pb.Run) {
	if len(runs) == 0 {
		return
	}
	names := make([]string, 0, len(runs))
	for _, r := range runs {
		names = append(names, r.GetJob())
		if r.GetState() == pb.RunState_RUN_STATE_UNSPECIFIED {
			l.fireSeparately(r)
		}
	}
	l.s.markDirty(names...)
}

// parentRuns spells a run's parents as the dispatch carries them.
func parentRuns(r *pb.Run) string {
	refs := r.GetParents()
	if len(refs) == 0 {
		return ""
	}
	parents := make([]fence.ParentRun, len(refs))
	for i, p := range refs {
		parents[i] = fence.ParentRun{RunID: p.GetRunId(), Token: p.GetToken()}
	}
	return fence.FormatParentRuns(parents)
}

// fireSeparately is the negative control of chains (failpoint
// chain-separate-entry): the state machine left the child r stands for
// unfired, and the leader fires it from memory in an entry of its own a
// while later; a leader lost meanwhile loses the child.
func (l *leader) fireSeparately(r *pb.Run) {
	if len(r.GetParents()) == 0 {
		return
	}
	delay, _ := time.ParseDuration(failpoint.Value(failpoint.ChainSeparateEntry))
	fire := &pb.Fire{Job: r.GetJob(), Kind: pb.FireKind_FIRE_KIND_CHAINED, RunId: r.GetParents()[0].GetRunId()}
	req := &triggerReq{name: r.GetJob(), fire: fire, done: make(chan triggerReply, 1)}
	go func() {
		if !l.sleep(delay) {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.closed {
			l.triggers = append(l.triggers, req)
			l.s.wakeLoop()
		}
	}()
}
