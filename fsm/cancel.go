package fsm

import (
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// cancelRun finishes an open run as CANCELLED on an operator's request.
// Committing the cancel, rather than only stopping the executor, is what
// keeps it cancelled: a run that is no longer open is never re-dispatched
// by a new leader nor retried, and its executing attempt is cancelled with
// it, so that attempt's late outcome is superseded.
func cancelRun(s *state, c *pb.Command, e entry) (outcome, error) {
	id := c.GetCancelRun().GetRunId()
	if id == "" {
		return outcome{}, malformed("cancel_run.run_id must not be empty")
	}
	r, ok := s.run(id)
	if !ok {
		return outcome{}, fail(ErrNotFound, "run %q not found", id)
	}
	if !isOpen(r.GetState()) {
		return outcome{}, fail(ErrRunFinished, "run %q is finished (%s): there is nothing to cancel",
			id, stateName(r.GetState()))
	}
	nr := cancelled(r, ReasonCancelRequested, e)
	if je, owned := s.owner(r); owned {
		next := copyStatus(je.status)
		next.OpenRunIds = removeID(next.OpenRunIds, id)
		s.noteFinished(next, nr)
		s.setStatus(je, next)
	}
	s.putRun(nr)
	return outcome{changed: true, run: nr}, nil
}

// stateName is a run state as the CLI shows it: "succeeded".
func stateName(st pb.RunState) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "RUN_STATE_"))
}
