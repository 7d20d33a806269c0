package scheduler

import (
	"fmt"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// dispatchBeforeCommit is the negative control of G2 (failpoint
// dispatch-before-commit): it hands the scheduled fires of a tick to the
// executors before they are committed, with the tokens and run ids it
// expects the state machine to give them. next is the last token it
// handed out in this tick (0 at the tick's first entry); it returns the new
// last one.
func (l *leader) dispatchBeforeCommit(batches []*fireBatch, next uint64) uint64 {
	ft, ok := l.s.state.(interface{ FencingToken() uint64 })
	if !ok {
		return next
	}
	next = max(next, ft.FencingToken())
	for _, c := range batches {
		for i, f := range c.fires {
			k := f.GetKind()
			if (k != pb.FireKind_FIRE_KIND_SCHEDULED && k != pb.FireKind_FIRE_KIND_CATCHUP) || c.jobOf[i] == nil {
				continue
			}
			next++
			l.dispatch(c.jobOf[i].GetSpec(), fmt.Sprintf("%s-%d", f.GetJob(), next), f.GetSlotUnix(), next, 1, k)
		}
	}
	return next
}
