package scheduler

import (
	"context"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// endPause proposes the end of the job's pause that ends at until, stamped
// with this leader's clock: a pause with an end is decided through the
// log, so a failover neither loses nor repeats it. The FSM changes
// nothing if the pause changed meanwhile. A failed proposal is made again
// when the job is planned next (its plan wakes a second later).
func (l *leader) endPause(job string, until int64) {
	cmd := &pb.Command{
		ProposedAtUnixNano: l.s.clock.Now().UnixNano(),
		Kind:               &pb.Command_EndPause{EndPause: &pb.EndPauseCommand{Job: job, UntilUnix: until}},
	}
	l.compWG.Add(1) // the term waits for it before it ends
	go func() {
		defer l.compWG.Done()
		ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
		defer cancel()
		if _, err := l.s.prop.Apply(ctx, cmd); err != nil && l.ctx.Err() == nil {
			l.s.log.Warn("scheduler: ending a pause not committed; retrying", "job", job, "error", err)
		}
	}()
}
