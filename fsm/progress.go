package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxProgressMessage bounds the message one attempt keeps; the API refuses
// a longer one, so this only guards the state against a broken proposer.
const maxProgressMessage = 256

// recordProgress records the progress remote workers reported, gathered by
// the leader (docs/workers.md). Each record is taken only for its run's
// current attempt while it executes: a report of an attempt that finished
// or was superseded meanwhile changes nothing. Nothing is refused: a
// record that does not apply is skipped, as a late outcome is.
func recordProgress(s *state, c *pb.Command, _ entry) (outcome, error) {
	for _, p := range c.GetRecordProgress().GetRecords() {
		applyProgress(s, p)
	}
	return outcome{changed: s.tx.isDirty()}, nil
}

func applyProgress(s *state, p *pb.ProgressRecord) {
	r, ok := s.run(p.GetRunId())
	if !ok || r.GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		return
	}
	cur := CurrentAttempt(r)
	if cur == nil || cur.GetToken() != p.GetToken() || cur.GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		return
	}
	if p.Progress != nil && p.GetProgress() > 100 {
		return
	}
	a := copyAttempt(cur)
	if p.Progress != nil {
		pct := p.GetProgress()
		a.Progress = &pct
	}
	a.ProgressMessage = truncateString(p.GetMessage(), maxProgressMessage)
	a.ProgressAtUnixNano = p.GetAtUnixNano()
	nr := copyRun(r)
	nr.Attempts = replaceLast(r.GetAttempts(), a)
	s.putRun(nr)
}
