package fsm_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// baseTime is where harness clocks start: any fixed instant will do.
var baseTime = time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)

// harness feeds commands to an FSM as Raft would: marshalled, with rising
// indexes and a proposer clock that moves one second per entry.
type harness struct {
	t     testing.TB
	f     *fsm.FSM
	index uint64
	now   time.Time
	// log is every entry applied, in order.
	log []raft.Log
}

// newHarness starts at this build's cluster version: the rules a cluster
// of this build applies once it raised the version.
func newHarness(t testing.TB) *harness {
	return newHarnessAt(t, fsm.CommandVersion)
}

// newHarnessAt starts at cluster version v; above 1, its first entry
// raises the version, as a leader does right after the first election.
func newHarnessAt(t testing.TB, v uint32) *harness {
	h := &harness{t: t, f: fsm.New(), now: baseTime}
	if v > 1 {
		h.mustOK(fsm.SetClusterVersion(v))
	}
	return h
}

// apply stamps c with the next proposer time and applies it.
func (h *harness) apply(c *pb.Command) *pb.CommandResult {
	h.t.Helper()
	h.now = h.now.Add(time.Second)
	c.ProposedAtUnixNano = h.now.UnixNano()
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		h.t.Fatalf("marshal command: %v", err)
	}
	return h.applyRaw(data)
}

func (h *harness) applyRaw(data []byte) *pb.CommandResult {
	h.t.Helper()
	h.index++
	l := raft.Log{Index: h.index, Term: termOf(data), Type: raft.LogCommand, Data: data}
	h.log = append(h.log, l)
	return applyLog(h.t, h.f, &l)
}

// termOf is the Raft term a leader would commit data in: a FireBatch's or
// CompleteBatch's own term (the FSM refuses fire batches from any other),
// else 1.
func termOf(data []byte) uint64 {
	var c pb.Command
	if proto.Unmarshal(data, &c) != nil {
		return 1
	}
	if t := c.GetFireBatch().GetTerm(); t != 0 {
		return t
	}
	if t := c.GetCompleteBatch().GetTerm(); t != 0 {
		return t
	}
	return 1
}

// applyLog applies one entry and insists on the *pb.CommandResult contract.
func applyLog(t testing.TB, f *fsm.FSM, l *raft.Log) *pb.CommandResult {
	t.Helper()
	out := f.Apply(l)
	r, ok := out.(*pb.CommandResult)
	if !ok || r == nil {
		t.Fatalf("Apply returned %T(%v), want a non-nil *pb.CommandResult", out, out)
	}
	return r
}

// mustOK applies c and fails the test unless the result is OK.
func (h *harness) mustOK(c *pb.Command) *pb.CommandResult {
	h.t.Helper()
	r := h.apply(c)
	if r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		h.t.Fatalf("apply %v: code %v (%s), want OK", c, r.GetCode(), r.GetMessage())
	}
	return r
}

// mustFail applies c, expects code, and checks that the state did not move.
func (h *harness) mustFail(c *pb.Command, code pb.ResultCode, sentinel error) *pb.CommandResult {
	h.t.Helper()
	before := h.f.StateHash()
	r := h.apply(c)
	if r.GetCode() != code {
		h.t.Fatalf("apply %v: code %v (%s), want %v", c, r.GetCode(), r.GetMessage(), code)
	}
	if r.GetMessage() == "" || r.GetJob() != nil || r.GetChanged() || r.GetCreated() {
		h.t.Fatalf("failed result %v: want a message and no job, changed or created", r)
	}
	if err := fsm.ResultError(r); !errors.Is(err, sentinel) {
		h.t.Fatalf("ResultError(%v) = %v, want it to wrap %v", r, err, sentinel)
	}
	if h.f.StateHash() != before {
		h.t.Fatalf("apply %v failed with %v but changed the state", c, code)
	}
	return r
}

func (h *harness) job(name string) *pb.Job {
	h.t.Helper()
	j, err := h.f.Job(name)
	if err != nil {
		h.t.Fatalf("Job(%q): %v", name, err)
	}
	return j
}

func testSpec(name string) *pb.JobSpec {
	return &pb.JobSpec{
		Name:     name,
		Schedule: "*/5 * * * *",
		Timezone: "UTC",
		Http: &pb.HttpTarget{
			Url:     "http://billing.test/" + name,
			Method:  "POST",
			Headers: map[string]string{"X-Team": "billing"},
			Timeout: durationpb.New(30 * time.Second),
		},
		Catchup:      &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Overlap:      pb.Overlap_OVERLAP_SKIP,
		Delivery:     pb.Delivery_DELIVERY_AT_LEAST_ONCE,
		Labels:       map[string]string{"team": "billing"},
		HistoryLimit: 10,
	}
}

func putCmd(mode pb.PutMode, spec *pb.JobSpec, expected uint64) *pb.Command {
	return &pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Spec: spec, Mode: mode, ExpectedVersion: expected}}}
}

func createCmd(spec *pb.JobSpec) *pb.Command { return putCmd(pb.PutMode_PUT_MODE_CREATE, spec, 0) }
func updateCmd(spec *pb.JobSpec, expected uint64) *pb.Command {
	return putCmd(pb.PutMode_PUT_MODE_UPDATE, spec, expected)
}
func upsertCmd(spec *pb.JobSpec) *pb.Command { return putCmd(pb.PutMode_PUT_MODE_UPSERT, spec, 0) }

func deleteCmd(name string, expected uint64) *pb.Command {
	return &pb.Command{Kind: &pb.Command_DeleteJob{DeleteJob: &pb.DeleteJobCommand{Name: name, ExpectedVersion: expected}}}
}

func pauseCmd(name string, paused bool, note string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_SetPaused{SetPaused: &pb.SetPausedCommand{Name: name, Paused: paused, Note: note}}}
}

func cloneSpec(s *pb.JobSpec) *pb.JobSpec { return proto.Clone(s).(*pb.JobSpec) }

// memSink is an in-memory raft.SnapshotSink. failAfter > 0 makes writes fail
// once that many bytes have been written.
type memSink struct {
	bytes.Buffer
	failAfter int
	closed    bool
	cancelled bool
}

var errSinkFull = errors.New("sink full")

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.Len()+len(p) > s.failAfter {
		return 0, errSinkFull
	}
	return s.Buffer.Write(p)
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// persist snapshots f and returns the stream's bytes.
func persist(t testing.TB, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("Persist left the sink closed=%v cancelled=%v, want closed only", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// refusesRestore checks that restoring data onto f fails with an error
// naming mention, and changes nothing.
func refusesRestore(t *testing.T, f *fsm.FSM, data []byte, mention string) {
	t.Helper()
	want := f.StateHash()
	err := restore(f, data)
	if err == nil || !strings.Contains(err.Error(), mention) {
		t.Fatalf("Restore: %v, want an error mentioning %q", err, mention)
	}
	if f.StateHash() != want {
		t.Fatal("rejected restore changed the state")
	}
}

func restore(f *fsm.FSM, data []byte) error {
	return f.Restore(readCloser{bytes.NewReader(data)})
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// replaysAlike applies the harness's whole log to a fresh FSM, and
// restores a snapshot of the harness's, and insists both end in its state:
// what the test's entries did is a function of the log alone and survives
// a snapshot.
func (h *harness) replaysAlike() {
	h.t.Helper()
	fresh := fsm.New()
	for i := range h.log {
		applyLog(h.t, fresh, &h.log[i])
	}
	if fresh.StateHash() != h.f.StateHash() {
		h.t.Fatal("the same log applied to a fresh FSM gives another state")
	}
	restored := fsm.New()
	if err := restore(restored, persist(h.t, h.f)); err != nil {
		h.t.Fatalf("Restore: %v", err)
	}
	if restored.StateHash() != h.f.StateHash() {
		h.t.Fatal("a snapshot restores another state")
	}
}
