package fsm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// FuzzApply feeds arbitrary log data to an FSM that already holds a job
// with an open run, another with a run waiting for a retry, and a
// tombstone. Whatever the bytes, Apply returns a result (or, for a kind of a
// newer build or a cluster version beyond this one, ErrUnknownCommand or
// ErrVersionTooNew and no change), any result that
// reports no change leaves the state exactly as it was, the fencing counter
// never goes back, and the state after it survives a snapshot round trip.
func FuzzApply(f *testing.F) {
	seed := func(c *pb.Command) {
		c.ProposedAtUnixNano = baseTime.UnixNano()
		b, err := proto.Marshal(c)
		if err != nil {
			f.Fatalf("marshal seed: %v", err)
		}
		f.Add(b)
	}
	seed(createCmd(testSpec("billing")))
	seed(createCmd(testSpec("fresh")))
	seed(updateCmd(testSpec("billing"), 1))
	seed(upsertCmd(testSpec("gone")))
	seed(deleteCmd("billing", 0))
	seed(pauseCmd("billing", true, "note"))
	seed(putCmd(pb.PutMode_PUT_MODE_UPSERT, nil, 0))
	slot := baseTime.Unix() + 600
	seed(fireBatchCmd(leaderID, leaderTerm, []*pb.Fire{
		slotFire("billing", 1, slot), slotFire("billing", 1, slot), slotFire("billing", 2, slot+1),
		slotFire("gone", 1, slot), manualFire("billing", "r1", false), manualFire("billing", "r1", true),
	}, []*pb.Miss{{Job: "billing", Generation: 1, FromSlotUnix: slot - 60, ToSlotUnix: slot - 1, Count: 5, Reason: "catchup_window"}}))
	seed(fireBatchCmd("n2", leaderTerm+1, []*pb.Fire{
		redispatchFire("billing", "billing-1"), retryFire("retry", "retry-2"), {Job: "billing", Kind: 42},
	}, nil))
	seed(fireBatchCmd("", 0, nil, nil))
	seed(completeBatchCmd(
		&pb.Completion{RunId: "billing-1", Token: 1, Outcome: stFailed, FinishedAtUnixNano: baseTime.UnixNano(), Output: []byte("boom")},
		&pb.Completion{RunId: "billing-1", Token: 1, Outcome: stSucceeded},
		&pb.Completion{RunId: "retry-2", Token: 2, Outcome: stSucceeded},
		&pb.Completion{RunId: "nope", Token: 9, Outcome: stFenced},
	))
	seed(completeBatchCmd(&pb.Completion{RunId: "billing-1", Token: 1, Outcome: stRetrying, Detail: "x"}))
	seed(&pb.Command{Kind: &pb.Command_CompleteBatch{}})
	seed(fsm.SetClusterVersion(fsm.CommandVersion))
	seed(fsm.SetClusterVersion(fsm.CommandVersion + 1))
	seed(fsm.SetClusterVersion(0))
	seed(membershipCmd(fsm.AuditMemberJoin, "n4", "10.0.0.4:7001", ""))
	seed(membershipCmd("member_promote", "", "", ""))
	seed(&pb.Command{})
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Add([]byte("not a protobuf at all"))

	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t)
		h.mustOK(createCmd(testSpec("billing")))
		h.mustOK(createCmd(testSpec("gone")))
		h.mustOK(createCmd(withRetry(testSpec("retry"), 3, time.Second, time.Second)))
		h.mustOK(deleteCmd("gone", 0))
		h.accepted(slotFire("billing", 1, baseTime.Unix()+60))                                   // billing-1, token 1
		h.finish(h.accepted(slotFire("retry", 1, baseTime.Unix()+60)).GetRun(), stFailed, h.now) // retry-2
		before, token := h.f.StateHash(), h.f.FencingToken()

		out := h.f.Apply(&raft.Log{Index: 100, Term: termOf(data), Type: raft.LogCommand, Data: data})
		if err, ok := out.(error); ok && (errors.Is(err, fsm.ErrUnknownCommand) || errors.Is(err, fsm.ErrVersionTooNew)) {
			// Rules of a newer build: the node stops, in the state it had.
			if h.f.StateHash() != before {
				t.Fatal("an entry of a newer build changed the state")
			}
			return
		}
		r, ok := out.(*pb.CommandResult)
		if !ok || r == nil {
			t.Fatalf("Apply returned %T, want a non-nil *pb.CommandResult, ErrUnknownCommand or ErrVersionTooNew", out)
		}
		if h.f.FencingToken() < token {
			t.Fatalf("fencing counter went back from %d to %d", token, h.f.FencingToken())
		}
		changed := h.f.StateHash() != before
		switch {
		case r.GetCode() == pb.ResultCode_RESULT_CODE_OK:
			if changed != r.GetChanged() {
				t.Fatalf("result says changed=%v, state hash says %v", r.GetChanged(), changed)
			}
		case r.GetCode() == pb.ResultCode_RESULT_CODE_UNSPECIFIED:
			t.Fatalf("result without a code: %v", r)
		case changed:
			t.Fatalf("%v result changed the state", r.GetCode())
		case r.GetMessage() == "":
			t.Fatalf("%v result without a message", r.GetCode())
		}

		// Whatever was stored must survive a snapshot round trip.
		restored := fsm.New()
		if err := restore(restored, persist(t, h.f)); err != nil {
			t.Fatalf("Restore after applying %v: %v", r, err)
		}
		if restored.StateHash() != h.f.StateHash() {
			t.Fatal("snapshot round trip changed the state hash")
		}
	})
}
