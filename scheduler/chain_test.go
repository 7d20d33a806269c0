package scheduler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// chainedSpec is a job without a schedule that runs after parent.
func chainedSpec(name, parent string) *pb.JobSpec {
	s := spec(name, "")
	s.After = []*pb.Dependency{{Job: parent}}
	return s
}

// A child fires once per parent success, from the entry that committed the
// parent's outcome: dispatched with its parent's run and token, a token
// above it, and its run's own key.
func TestChainedChildIsDispatchedWithItsLineage(t *testing.T) {
	h := newHarness(t)
	h.putJob(spec("a", "@every 5s"))
	h.putJob(chainedSpec("b", "a"))
	h.putJob(chainedSpec("c", "b"))
	h.lead()
	h.step(16 * time.Second)
	as, bs, cs := h.exec.startedOf("a"), h.exec.startedOf("b"), h.exec.startedOf("c")
	if len(as) != 3 || len(bs) != 3 || len(cs) != 3 {
		t.Fatalf("attempts a %d, b %d, c %d; want 3 each", len(as), len(bs), len(cs))
	}
	for i := range as {
		for _, pc := range [][2]dispatch.Attempt{{as[i], bs[i]}, {bs[i], cs[i]}} {
			parent, child := pc[0], pc[1]
			if want := fmt.Sprintf("%s@%d", parent.RunID, parent.Token); child.ParentRuns != want || child.Token <= parent.Token {
				t.Fatalf("%s (token %d) carries parents %q, want %q below its token", child.RunID, child.Token, child.ParentRuns, want)
			}
		}
		if bs[i].Kind != pb.FireKind_FIRE_KIND_CHAINED || bs[i].IdempotencyKey() != "b/chained/"+bs[i].RunID {
			t.Fatalf("b's attempt %d: kind %v, key %q", i, bs[i].Kind, bs[i].IdempotencyKey())
		}
	}
	if as[0].ParentRuns != "" {
		t.Fatalf("a scheduled run carries parents %q", as[0].ParentRuns)
	}
}

// The leader that committed a parent's outcome loses leadership before it
// dispatched the child: the child's run is committed all the same, and the
// next leader dispatches it (at_least_once, a new attempt), once.
func TestChainedChildOutlivesItsLeader(t *testing.T) {
	h := newHarness(t)
	h.putJob(spec("a", "@every 5s"))
	h.putJob(chainedSpec("b", "a"))
	lost := make(chan struct{})
	var once sync.Once
	h.prop.after = func(cmd *pb.Command, res *pb.CommandResult) {
		if len(res.GetChained()) > 0 && h.prop.term.Load() == 2 {
			once.Do(func() {
				h.s.SetLeader(false) // the entry committed; the leader is gone before it hears
				close(lost)
			})
		}
	}
	h.lead()
	h.clock.Advance(5 * time.Second)
	h.s.wakeLoop()
	<-lost
	h.waitFor("the term to end", func() bool { return h.s.current() == nil })
	if n := len(h.exec.startedOf("b")); n != 0 {
		t.Fatalf("b dispatched %d times by the lost leader", n)
	}
	runs := h.runs("b")
	if len(runs) != 1 || fsm.CurrentAttempt(runs[0]).GetTerm() != 2 || runs[0].GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		t.Fatalf("b's runs after the loss: %v", runs)
	}
	h.prop.after = nil
	h.prop.term.Store(3)
	h.lead()
	bs := h.exec.startedOf("b")
	if len(bs) != 1 || bs[0].RunID != runs[0].GetId() || bs[0].Number != 2 || bs[0].ParentRuns != parentRuns(runs[0]) {
		t.Fatalf("b's attempts under the next leader: %+v, want run %s again as attempt 2 with its parents", bs, runs[0].GetId())
	}
}
