package cluster

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// newerKindEntry is a command as a newer release would propose it: a kind
// at a oneof field number this build does not know.
func newerKindEntry(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&pb.Command{ProposedAtUnixNano: time.Now().UnixNano()})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	return protowire.AppendBytes(b, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "x"))
}

func fsmPut(name string) *pb.Command {
	return &pb.Command{
		ProposedAtUnixNano: time.Now().UnixNano(),
		Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{
			Spec: &pb.JobSpec{Name: name, Schedule: "@daily"},
			Mode: pb.PutMode_PUT_MODE_UPSERT,
		}},
	}
}

// upgradableFSM is the real FSM of this build, or, once upgraded, one of a
// newer build that knows kind 99 (it applies it as a no-op).
type upgradableFSM struct {
	*fsm.FSM
	upgraded atomic.Bool
}

func (f *upgradableFSM) Apply(l *raft.Log) any {
	var c pb.Command
	if f.upgraded.Load() && proto.Unmarshal(l.Data, &c) == nil && c.GetKind() == nil && len(c.ProtoReflect().GetUnknown()) > 0 {
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK}
	}
	return f.FSM.Apply(l)
}

// A follower that meets an entry it cannot apply stops: it says why, shuts
// Raft down, applies nothing more and takes no snapshot, so that once
// upgraded it replays the entry instead of carrying on without it. The
// nodes that can apply it carry on.
func TestNodeStopsOnEntryItCannotApply(t *testing.T) {
	states := map[string]*upgradableFSM{}
	tc := newCluster(t, 3, func(c *Config) {
		states[c.ID] = &upgradableFSM{FSM: fsm.New()}
		c.FSM = states[c.ID]
	})
	leader := tc.waitLeader(10 * time.Second)
	followers := tc.followers(leader)
	newer, old := followers[0], followers[1]
	states[leader.id].upgraded.Store(true)
	states[newer.id].upgraded.Store(true)
	if _, err := applyRetrying(t, leader.node, fsmPut("billing")); err != nil {
		t.Fatalf("put: %v", err)
	}
	readBarrier(t, old.node)
	before := states[old.id].StateHash()

	// As a newer leader would: straight into the log, past the version check.
	f := leader.node.raft.Apply(newerKindEntry(t), 5*time.Second)
	if err := waitFuture(ctxTimeout(t, 10*time.Second), f); err != nil {
		t.Fatalf("raft apply: %v", err)
	}

	select {
	case <-old.node.Halted():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not halt", old.id)
	}
	err := old.node.HaltErr()
	if !errors.Is(err, ErrHalted) || !errors.Is(err, fsm.ErrUnknownCommand) || !strings.Contains(err.Error(), "upgrade this node") {
		t.Errorf("HaltErr %v, want ErrHalted wrapping fsm.ErrUnknownCommand with what to do", err)
	}
	testutil.WaitFor(t, 10*time.Second, old.id+" raft shut down", func() bool { return old.node.raft.State() == raft.Shutdown })
	if states[old.id].StateHash() != before {
		t.Error("the state changed by an entry the node could not apply")
	}
	if got := old.node.fsm.applied.Load(); got >= f.Index() {
		t.Errorf("tracked applied index %d covers the entry %d the node could not apply", got, f.Index())
	}
	if _, err := old.node.fsm.Snapshot(); !errors.Is(err, ErrHalted) {
		t.Errorf("snapshot after halting: %v, want ErrHalted", err)
	}
	res := old.node.fsm.Apply(&raft.Log{Index: f.Index() + 1, Data: mustMarshal(t, fsmPut("later"))})
	if err, _ := res.(error); !errors.Is(err, ErrHalted) {
		t.Errorf("an entry after the halt gave %v, want ErrHalted", res)
	}
	if _, err := states[old.id].Job("later"); err == nil {
		t.Error("the node applied an entry after halting")
	}

	// The nodes that know the kind neither halt nor stop serving.
	if _, err := applyRetrying(t, newer.node, fsmPut("after")); err != nil {
		t.Fatalf("put after %s halted: %v", old.id, err)
	}
	for _, tn := range []*testNode{leader, newer} {
		if tn.node.HaltErr() != nil {
			t.Errorf("%s halted: %v", tn.id, tn.node.HaltErr())
		}
	}
}

func mustMarshal(t *testing.T, c *pb.Command) []byte {
	t.Helper()
	b, err := proto.Marshal(c)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}
