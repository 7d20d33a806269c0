package scheduler

import (
	"context"
	"fmt"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// triggerReq is a manual run waiting for the next tick.
type triggerReq struct {
	name      string
	requestID string
	force     bool
	principal string
	// parentRun: a chained fire of the job for that parent run, which only
	// the chain-separate-entry failpoint proposes (chain.go).
	parentRun string
	done      chan triggerReply // cap 1
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
// accepts it. requestID makes it idempotent: a second trigger with the same
// id returns the first run (refused, reason duplicate_request). A paused job
// is refused unless force. principal is who asked, for the audit record of
// the run. It fails with cluster.ErrNotLeader on a follower, and with a
// wrapped fsm.ErrNotFound for an unknown job.
func (s *Scheduler) Trigger(ctx context.Context, name, requestID string, force bool, principal string) (*pb.FireResult, error) {
	l := s.current()
	if l == nil {
		return nil, cluster.ErrNotLeader
	}
	req := &triggerReq{
		name: name, requestID: requestID, force: force, principal: principal,
		done: make(chan triggerReply, 1),
	}
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
		f := &pb.Fire{
			Job:        req.name,
			Generation: job.GetGeneration(),
			Kind:       pb.FireKind_FIRE_KIND_MANUAL,
			RequestId:  req.requestID,
			Force:      req.force,
			Principal:  req.principal,
		}
		if req.parentRun != "" {
			f.Kind, f.RunId = pb.FireKind_FIRE_KIND_CHAINED, req.parentRun
		}
		g.fires = append(g.fires, f)
		g.reqs = append(g.reqs, req)
	}
}
