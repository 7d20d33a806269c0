package fsm_test

import (
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// FuzzApply feeds arbitrary log data to an FSM that already holds a job and
// a tombstone. Whatever the bytes, Apply returns a result, any result that
// reports no change leaves the state exactly as it was, and the state after
// it survives a snapshot round trip.
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
	seed(&pb.Command{})
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Add([]byte("not a protobuf at all"))

	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t)
		h.mustOK(createCmd(testSpec("billing")))
		h.mustOK(createCmd(testSpec("gone")))
		h.mustOK(deleteCmd("gone", 0))
		before := h.f.StateHash()

		out := h.f.Apply(&raft.Log{Index: 100, Term: 1, Type: raft.LogCommand, Data: data})
		r, ok := out.(*pb.CommandResult)
		if !ok || r == nil {
			t.Fatalf("Apply returned %T, want a non-nil *pb.CommandResult", out)
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
