package scheduler

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// triggerReq is a manual run waiting for the next tick.
type triggerReq struct {
	name string
	fire *pb.Fire          // the caller's, generation and kind to fill in
	done chan triggerReply // cap 1
}

type triggerReply struct {
	res *pb.FireResult
	err error
}

func (t *triggerReq) reply(res *pb.FireResult, err error) {
	select {
	case t.done <- triggerReply{res, err}:
	default: // already answered
	}
}

// Trigger commits a manual run of the job now (fire kind MANUAL, its own
// slot and token) in the leader's next tick and dispatches it if the FSM
// accepts it. run is the fire to commit: its job, its request id, which
// makes it idempotent (a second trigger with the same id returns the first
// run, refused with reason duplicate_request), force (a paused job is
// refused without it), the principal who asked (for the audit record of
// the run), and a payload and an overlap policy for the run; the leader
// fills in the job's generation and the kind. It fails with
// cluster.ErrNotLeader on a follower, and with a wrapped fsm.ErrNotFound
// for an unknown job.
func (s *Scheduler) Trigger(ctx context.Context, run *pb.Fire) (*pb.FireResult, error) {
	l := s.current()
	if l == nil {
		return nil, cluster.ErrNotLeader
	}
	req := &triggerReq{name: run.GetJob(), fire: proto.CloneOf(run), done: make(chan triggerReply, 1)}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, cluster.ErrNotLeader
	}
	l.triggers = append(l.triggers, req)
	l.mu.Unlock()
	s.wakeLoop()
	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// takeTriggers removes the pending triggers.
func (l *leader) takeTriggers() []*triggerReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	reqs := l.triggers
	l.triggers = nil
	return reqs
}

// addTriggers puts triggers into pl, each in its job's group after the job's
// planned fires.
func (l *leader) addTriggers(pl *planned, reqs []*triggerReq) {
	for _, req := range reqs {
		sj, err := l.s.state.StoredJob(req.name)
		if err != nil {
			req.reply(nil, fmt.Errorf("trigger %q: %w", req.name, err))
			continue
		}
		job := sj.Job
		g := pl.group(req.name, job)
		for len(g.reqs) < len(g.fires) {
			g.reqs = append(g.reqs, nil)
		}
		f := req.fire
		f.Generation = job.GetGeneration()
		if f.GetKind() != pb.FireKind_FIRE_KIND_CHAINED { // only fireSeparately's, the negative control's
			f.Kind = pb.FireKind_FIRE_KIND_MANUAL
		}
		g.fires = append(g.fires, f)
		g.reqs = append(g.reqs, req)
	}
}
