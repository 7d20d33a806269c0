package fsm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// newerKind is a command as a newer build would marshal it: a kind this
// build does not know, at a oneof field number beyond today's.
func newerKind(t testing.TB) []byte {
	t.Helper()
	b, err := proto.Marshal(&pb.Command{ProposedAtUnixNano: baseTime.UnixNano()})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	inner := protowire.AppendTag(nil, 1, protowire.BytesType)
	inner = protowire.AppendString(inner, "ops-token")
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	return protowire.AppendBytes(b, inner)
}

func decodeCmd(t testing.TB, data []byte) *pb.Command {
	t.Helper()
	var c pb.Command
	if err := proto.Unmarshal(data, &c); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return &c
}

func TestVersionOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *pb.Command
		want uint32
	}{
		{"put_job", createCmd(testSpec("billing")), 1},
		{"delete_job", deleteCmd("billing", 0), 1},
		{"set_paused", pauseCmd("billing", true, ""), 1},
		{"fire_batch", fireBatchCmd(leaderID, leaderTerm, nil, nil), 1},
		{"complete_batch", completeBatchCmd(), 1},
		{"cancel_run", cancelCmd("billing-1"), 2},
		{"record_progress", progressCmd(), 3},
		{"put_job of a worker target with a lease", createCmd(leasedWorkerSpec("billing")), 3},
		{"put_job of a worker target without one", createCmd(workerSpec("billing")), 1},
		{"put_job with schedules", createCmd(withSchedules(testSpec("billing"))), 3},
		{"put_job with max_runs", createCmd(func() *pb.JobSpec { s := testSpec("billing"); s.MaxRuns = 3; return s }()), 3},
		{"put_job with pause_after_failures", createCmd(func() *pb.JobSpec { s := testSpec("billing"); s.PauseAfterFailures = 3; return s }()), 3},
		{"put_job with jitter", createCmd(func() *pb.JobSpec { s := testSpec("billing"); s.Jitter = durationpb.New(time.Second); return s }()), 3},
		{"set_paused until", pauseUntilCmd("billing", baseTime), 3},
		{"start_backfill", startBackfillCmd("billing", 1, 0, 1, fsm.BackfillBufferOne, 1), 3},
		{"cancel_backfill", cancelBackfillCmd("billing"), 3},
		{"end_pause", endPauseCmd("billing", baseTime), 3},
		{"set_cluster_version 2", fsm.SetClusterVersion(2), 2},
		{"set_cluster_version 1", fsm.SetClusterVersion(1), 2},
		{"set_cluster_version beyond this build", fsm.SetClusterVersion(fsm.CommandVersion + 1), fsm.CommandVersion + 1},
		{"no kind", &pb.Command{}, 1},
		{"nil", nil, 1},
		{"no kind, unknown varint field", decodeCmd(t, []byte{0xa0, 0x06, 0x01}), 1},
		{"a kind newer than this build", decodeCmd(t, newerKind(t)), fsm.CommandVersion + 1},
	} {
		if got := fsm.VersionOf(tc.cmd); got != tc.want {
			t.Errorf("VersionOf(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// An entry of a kind this build does not know is not answered MALFORMED
// (its peers that know the kind apply it): Apply returns ErrUnknownCommand
// and changes nothing at all, so the node can stop in the state its peers
// had before the entry.
func TestApplyOfUnknownKindStopsInsteadOfAnswering(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("billing")))
	rec := &recorder{}
	h.f.SetObserver(rec)
	before, applied := h.f.StateHash(), h.f.AppliedIndex()

	out := h.f.Apply(&raft.Log{Index: 42, Term: 1, Type: raft.LogCommand, Data: newerKind(t)})
	err, ok := out.(error)
	if !ok || !errors.Is(err, fsm.ErrUnknownCommand) {
		t.Fatalf("Apply = %T(%v), want an error wrapping ErrUnknownCommand", out, out)
	}
	for _, want := range []string{"log entry 42", "field 99", "upgrade this node"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	if h.f.StateHash() != before || h.f.AppliedIndex() != applied {
		t.Fatal("an entry of an unknown kind changed the state or the applied index")
	}
	if names, runs := rec.take(); len(names)+len(runs) != 0 {
		t.Fatalf("an entry of an unknown kind notified %v %v", names, runs)
	}
}

// A newer build's extra field on a kind this build knows is ignored: only
// a new kind needs a new version (fsm/DESIGN.md says why).
func TestUnknownFieldOfKnownKindIsApplied(t *testing.T) {
	h := newHarness(t)
	b, err := proto.Marshal(createCmd(testSpec("billing")))
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	b = protowire.AppendTag(b, 9, protowire.BytesType)
	b = protowire.AppendString(b, "principal")
	if r := h.applyRaw(b); r.GetCode() != codeOK || !r.GetCreated() {
		t.Fatalf("create with an unknown extra field: %v, want OK and created", r)
	}
}

func withSchedules(s *pb.JobSpec) *pb.JobSpec {
	s.Schedule, s.Schedules = "", []string{"0 9 * * *", "0 12 * * sat"}
	return s
}
