package scheduler

import (
	"errors"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// errRunCancelled is the cause of an attempt stopped because its run was
// cancelled through the log (RunService.CancelRun).
var errRunCancelled = errors.New("run cancelled on request")

// runCancelled stops the attempts of a run whose cancel this node applied.
// It runs in the FSM observer, so it never blocks. The cancel may commit
// after the fire that created the run but before this leader dispatches
// that fire; such a run is also remembered for the end of the current
// tick, when every attempt the tick dispatches is in the hand-off.
func (s *Scheduler) runCancelled(r *pb.Run) {
	s.handoff.cancelRun(r.GetJob(), r.GetId(), errRunCancelled)
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.tracking {
		s.cancelled = append(s.cancelled, r)
	}
}

// isCancelRequest reports whether r was just cancelled by an operator.
func isCancelRequest(r *pb.Run) bool {
	return r.GetState() == pb.RunState_RUN_STATE_CANCELLED && r.GetReason() == fsm.ReasonCancelRequested
}

// stopCancelled stops the attempts of runs cancelled during the tick that
// the tick dispatched after the cancel was applied.
func (l *leader) stopCancelled() {
	l.s.dmu.Lock()
	runs := l.s.cancelled
	l.s.cancelled = nil
	l.s.dmu.Unlock()
	for _, r := range runs {
		l.s.handoff.cancelRun(r.GetJob(), r.GetId(), errRunCancelled)
	}
}

// cancelRun cancels the tasks of one run: a running attempt stops, a
// remote one is cancelled on its worker, a waiting one ends cancelled
// without starting.
func (h *handoff) cancelRun(job, runID string, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.live[job] {
		if t.a.RunID == runID {
			t.cancel(cause)
		}
	}
}
