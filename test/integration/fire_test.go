package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// An every-second job fires through a leader crash, a graceful leader
// stop, a leader cut off at the transport while one of its attempts is on
// the wire, and a follower restart. On the sink's history: no slot under
// two run ids (G1), every slot applied once (G4), tokens rising with the
// slots (G3), and the cut-off leader's late attempt refused by the fence
// (G9). The three ledgers end identical, and every delivery is an attempt
// the ledger committed (G2).
func TestEverySecondJobThroughLeaderLossIsolationAndRestart(t *testing.T) {
	sc := startScenario(t)
	// Each node that goes down stays down while the other two fire a few
	// slots, then restarts on its data.
	sc.phase("leader crash", func() {
		old := sc.tc.waitLeader(3, 10*time.Second)
		old.crash()
		if now := sc.tc.waitLeader(2, 10*time.Second); now == old {
			t.Fatalf("crashed %s still leads", old.id)
		}
		sc.waitSlots(downSlots)
		old.start(nil)
	})
	sc.phase("leader graceful stop", func() {
		old := sc.tc.waitLeader(3, 10*time.Second)
		old.stop()
		sc.tc.waitLeader(2, 10*time.Second)
		sc.waitSlots(downSlots)
		old.start(nil)
	})
	sc.phase("leader isolated", sc.isolateLeader)
	sc.phase("follower restart", func() {
		leader := sc.tc.waitLeader(3, 10*time.Second)
		f := sc.tc.nodes[0]
		if f == leader {
			f = sc.tc.nodes[1]
		}
		f.stop()
		sc.waitSlots(downSlots)
		f.start(nil)
	})
	sc.finish()
}

// quorumOutage is longer than scheduler.OnTime, so that some slots of the
// outage can only fire as catch-up.
const quorumOutage = scheduler.OnTime + 2*time.Second

// With two of three nodes down for longer than OnTime nothing can commit;
// once they are back, every slot of the outage is owed (it is well inside
// the one-minute catch-up window) and must be caught up, one at a time for
// an overlap-skip job, before the job fires on time again (G4).
func TestEverySecondJobCatchesUpAfterQuorumLoss(t *testing.T) {
	sc := startScenario(t)
	sc.phase("quorum lost", func() {
		leader := sc.tc.waitLeader(3, 10*time.Second)
		down := []*node{leader, sc.tc.nodes[0]}
		if down[1] == leader {
			down[1] = sc.tc.nodes[1]
		}
		for _, n := range down {
			n.crash()
		}
		time.Sleep(quorumOutage) // the outage itself, not a wait for a condition
		for _, n := range down {
			n.start(nil)
		}
	})
	for _, p := range sc.finish() {
		if p.name == "quorum lost" && p.caughtUp == 0 {
			t.Errorf("no slot fired as catch-up after a %s outage", quorumOutage)
		}
	}
}

// isolateLeader holds the leader's next attempt, cuts the leader off the
// network the moment it has that attempt in hand (committed, not yet
// delivered), and lets the attempt reach the sink only once the new leader
// has re-dispatched its run with a newer token. The fence must refuse it:
// with the fence off it would be acknowledged as a duplicate, and with
// neither fence nor de-duplication it would be applied twice.
func (sc *scenario) isolateLeader() {
	t := sc.t
	old := sc.tc.waitLeader(3, 10*time.Second)
	iso := old.iso
	h := old.exec.holdNext(func(dispatch.Attempt) { iso.Cut() })
	t.Cleanup(h.let)
	var late dispatch.Attempt
	select {
	case late = <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatalf("leader %s dispatched nothing within 10s", old.id)
	}
	slot := late.ScheduledAt.Unix()
	t.Logf("%s cut off holding run %s (slot %d, token %d)", old.id, late.RunID, slot, late.Token)

	leader := sc.tc.waitLeader(2, 10*time.Second)
	if leader == old {
		t.Fatalf("cut-off %s still leads", old.id)
	}
	testutil.WaitFor(t, 10*time.Second, "the cut-off leader to step down", func() bool { return !old.raft().IsLeader() })
	testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("a token above %d applied at the sink", late.Token), func() bool {
		_, tok := sc.sink.lastApplied(jobName)
		return tok > late.Token
	})
	sc.waitSlots(downSlots)

	h.let()
	var out dispatch.Outcome
	select {
	case out = <-h.result:
	case <-time.After(10 * time.Second):
		t.Fatal("the late attempt was not delivered within 10s")
	}
	ds := sc.sink.find(jobName, late.Token)
	if len(ds) != 1 || ds[0].Outcome != stale {
		t.Fatalf("late attempt (token %d) at the sink: %+v; want exactly one delivery refused as stale", late.Token, ds)
	}
	if out.State != pb.RunState_RUN_STATE_FENCED {
		t.Errorf("late attempt outcome %s (%s), want FENCED", out.State, out.Detail)
	}
	// The new leader re-dispatched the orphaned run: same run, attempt 2,
	// a newer token, applied.
	var redispatched bool
	for _, d := range sc.sink.deliveries() {
		if d.Job == jobName && d.Slot == slot && d.Outcome == applied {
			redispatched = d.RunID == late.RunID && d.Attempt == 2 && d.Token > late.Token
			if !redispatched {
				t.Errorf("slot %d applied as %+v; want run %s re-dispatched as attempt 2 with a token above %d",
					slot, d, late.RunID, late.Token)
			}
		}
	}
	if !redispatched {
		t.Errorf("slot %d of the orphaned run was never applied", slot)
	}
	sc.waitSlots(downSlots)
	iso.Heal()
}
