package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

var takenAt = time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)

// state is an FSM with two jobs, one fired once: a run in flight and a
// fencing counter of 1.
func state(t *testing.T) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	now := takenAt
	apply := func(c *pb.Command) {
		t.Helper()
		now = now.Add(time.Second)
		c.ProposedAtUnixNano = now.UnixNano()
		data, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		res := f.Apply(&raft.Log{Index: uint64(now.Unix()), Term: 3, Type: raft.LogCommand, Data: data}).(*pb.CommandResult)
		if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Fatalf("apply: %v", res)
		}
	}
	for _, name := range []string{"billing", "cleanup"} {
		apply(&pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Mode: pb.PutMode_PUT_MODE_CREATE,
			Spec: &pb.JobSpec{Name: name, Schedule: "@every 1s", Timezone: "UTC", Http: &pb.HttpTarget{Url: "http://x.test/"}}}}})
	}
	apply(&pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{LeaderId: "n1", Term: 3,
		Fires: []*pb.Fire{{Job: "billing", Generation: 1, SlotUnix: now.Unix() + 5, Kind: pb.FireKind_FIRE_KIND_SCHEDULED}}}}})
	return f
}

func fsmStream(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Close() error  { return nil }
func (*memSink) Cancel() error { return nil }

func header(size int) *pb.BackupHeader {
	return &pb.BackupHeader{Index: 42, Term: 3, NodeId: "n1", Size: uint64(size)}
}

// file writes a backup file around body.
func file(t *testing.T, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := backup.Write(&buf, header(len(body)), bytes.NewReader(body)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func inspect(data []byte) (*backup.File, error) {
	return backup.Inspect(bytes.NewReader(data), int64(len(data)))
}

func TestWriteThenInspect(t *testing.T) {
	t.Parallel()
	f := state(t)
	body := fsmStream(t, f)
	var buf bytes.Buffer
	sum, err := backup.Write(&buf, header(len(body)), bytes.NewReader(body))
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	data := buf.Bytes()
	if !strings.HasPrefix(string(data), "raftcron snapshot v1\n") {
		t.Fatalf("file starts %q, want the version line", data[:min(len(data), 30)])
	}
	got, err := inspect(data)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if !proto.Equal(got.Header, header(len(body))) || got.SHA256 != sum {
		t.Fatalf("header %v sum %x, want %v and %x", got.Header, got.SHA256, header(len(body)), sum)
	}
	want := fsm.SnapshotSummary{FormatVersion: 1, FencingCounter: 1, Jobs: 2, Runs: 1, OpenRuns: 1}
	if got.Snapshot != want {
		t.Fatalf("summary %+v, want %+v", got.Snapshot, want)
	}
	// The checksum covers everything before the trailer.
	trailerAt := bytes.Index(data, body) + len(body)
	if sha256.Sum256(data[:trailerAt]) != sum {
		t.Fatal("the checksum is not the SHA-256 of the bytes before the trailer")
	}
	inner, err := io.ReadAll(got.Body())
	if err != nil || !bytes.Equal(inner, body) {
		t.Fatalf("Body differs from the stream written (%v)", err)
	}
}

func TestWriteRefusesABodyOfAnotherSize(t *testing.T) {
	t.Parallel()
	body := fsmStream(t, state(t))
	for _, size := range []int{len(body) - 1, len(body) + 1} {
		if _, err := backup.Write(io.Discard, header(size), bytes.NewReader(body)); err == nil {
			t.Errorf("header size %d for a %d-byte stream: no error", size, len(body))
		}
	}
}

// Every way a file can be wrong is refused with its own sentinel.
func TestInspectRefusesBadFiles(t *testing.T) {
	t.Parallel()
	body := fsmStream(t, state(t))
	good := file(t, body)
	bodyAt := bytes.Index(good, body)
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	notFSM := bytes.Repeat([]byte{0x7f}, 40)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, backup.ErrNotBackup},
		{"another format", []byte("PK\x03\x04 zip"), backup.ErrNotBackup},
		{"newer version", append([]byte("raftcron snapshot v2\n"), good[len("raftcron snapshot v1\n"):]...), backup.ErrVersion},
		{"no line end", []byte("raftcron snapshot v1"), backup.ErrTruncated},
		{"header cut", good[:bodyAt-2], backup.ErrTruncated},
		{"body cut", good[:bodyAt+len(body)/2], backup.ErrTruncated},
		{"trailer cut", good[:len(good)-1], backup.ErrTruncated},
		{"trailer missing", good[:bodyAt+len(body)], backup.ErrTruncated},
		{"byte flipped in the body", flip(bodyAt + len(body)/2), backup.ErrChecksum},
		{"byte flipped in the header", flip(bodyAt - 3), nil}, // a size or checksum error, whichever the flip makes
		{"data after the trailer", append(bytes.Clone(good), 0), backup.ErrMalformed},
		{"a body the FSM cannot read", file(t, notFSM), backup.ErrSnapshot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inspect(tc.data)
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// A file cut at any byte, or with any byte changed, is refused: nothing
// partial is ever accepted.
func TestInspectRefusesEveryCutAndEveryFlip(t *testing.T) {
	t.Parallel()
	good := file(t, fsmStream(t, state(t)))
	for n := range len(good) {
		if _, err := inspect(good[:n]); err == nil {
			t.Fatalf("file cut to %d of %d bytes accepted", n, len(good))
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x01
		if _, err := inspect(b); err == nil {
			t.Fatalf("file with byte %d of %d flipped accepted", i, len(good))
		}
	}
}

type fakeSource struct {
	info cluster.SnapshotInfo
	data []byte
	err  error
}

func (s *fakeSource) TakeSnapshot(context.Context) (cluster.SnapshotInfo, io.ReadCloser, error) {
	return s.info, io.NopCloser(bytes.NewReader(s.data)), s.err
}

func TestSaveWrapsTheLeadersSnapshot(t *testing.T) {
	t.Parallel()
	body := fsmStream(t, state(t))
	src := &fakeSource{info: cluster.SnapshotInfo{Index: 7, Term: 2, Size: int64(len(body)), NodeID: "n2"}, data: body}
	var buf bytes.Buffer
	h, sum, err := backup.Save(context.Background(), src, func() time.Time { return takenAt }, &buf)
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	got, err := inspect(buf.Bytes())
	if err != nil {
		t.Fatalf("Inspect of a saved file: %v", err)
	}
	want := &pb.BackupHeader{Index: 7, Term: 2, NodeId: "n2", Size: uint64(len(body))}
	want.TakenAt = h.GetTakenAt()
	if !proto.Equal(got.Header, want) || !h.GetTakenAt().AsTime().Equal(takenAt) || got.SHA256 != sum {
		t.Fatalf("header %v, want %v taken at %s", got.Header, want, takenAt)
	}
	src.err = errors.New("not the leader")
	if _, _, err := backup.Save(context.Background(), src, time.Now, io.Discard); !errors.Is(err, src.err) {
		t.Fatalf("Save with a failing source: %v", err)
	}
}

// fakeTarget restores into a local FSM, as Raft would on the leader.
type fakeTarget struct {
	f    *fsm.FSM
	from cluster.SnapshotInfo
}

func (tg *fakeTarget) RestoreSnapshot(_ context.Context, from cluster.SnapshotInfo, prepare cluster.RestoreFunc) (uint64, error) {
	tg.from = from
	r, size, err := prepare()
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	if int64(len(data)) != size {
		return 0, errors.New("size mismatch")
	}
	return 99, tg.f.Restore(io.NopCloser(bytes.NewReader(data)))
}

// liveAt is a live state with no jobs, the fencing counter at counter and
// the cluster version at v.
func liveAt(t *testing.T, counter uint64, v uint32) *fsm.FSM {
	t.Helper()
	r, _, err := fsm.WithCounterFloor(bytes.NewReader(fsmStream(t, fsm.New())), counter)
	if err != nil {
		t.Fatal(err)
	}
	f := fsm.New()
	if err := f.Restore(io.NopCloser(r)); err != nil {
		t.Fatal(err)
	}
	applyTo(t, f, 1, fsm.SetClusterVersion(v))
	return f
}

func applyTo(t *testing.T, f *fsm.FSM, index uint64, c *pb.Command) {
	t.Helper()
	data, err := proto.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if res := f.Apply(&raft.Log{Index: index, Term: 3, Type: raft.LogCommand, Data: data}).(*pb.CommandResult); res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("apply %v: %v", c, res)
	}
}

func TestRestoreNeverMovesTheCounterBackAndOrphansInFlightRuns(t *testing.T) {
	t.Parallel()
	f, err := inspect(file(t, fsmStream(t, state(t))))
	if err != nil {
		t.Fatal(err)
	}
	for _, live := range []uint64{0, 1, 500} {
		tg := &fakeTarget{f: liveAt(t, live, fsm.CommandVersion)}
		scratch := t.TempDir()
		res, err := backup.Restore(context.Background(), tg, tg.f, f, scratch, backup.Options{})
		if err != nil {
			t.Fatalf("live counter %d: Restore: %v", live, err)
		}
		want := max(live, 1)
		if res.FencingCounter != want || tg.f.FencingToken() != want || res.FileFencingCounter != 1 || res.Index != 99 || !res.KeptLive {
			t.Errorf("live counter %d: result %+v, restored counter %d; want %d", live, res, tg.f.FencingToken(), want)
		}
		if tg.from.Index != 42 || tg.from.Term != 3 {
			t.Errorf("restored from %+v, want the file's index 42 and term 3", tg.from)
		}
		open := tg.f.OpenRuns()
		if len(open) != 1 || open[0].GetAttempts()[0].GetTerm() != 0 {
			t.Errorf("open runs after the restore %v, want one whose attempt has term 0", open)
		}
		if left, _ := os.ReadDir(scratch); len(left) != 0 {
			t.Errorf("scratch files left behind: %v", left)
		}
	}
}

func TestHeaderRecordIsLengthDelimited(t *testing.T) {
	t.Parallel()
	// The format is documented as a version line then length-delimited
	// records; a reader built from the documentation must find the header.
	good := file(t, fsmStream(t, state(t)))
	rest := bytes.NewReader(good[len("raftcron snapshot v1\n"):])
	var h pb.BackupHeader
	if err := protodelim.UnmarshalFrom(rest, &h); err != nil || h.GetIndex() != 42 {
		t.Fatalf("header as documented: %v, %v", &h, err)
	}
}

// A file taken before the live cluster bootstrapped its ACLs is refused,
// before anything is copied or proposed, unless forced; forced, the
// restore records it.
func TestRestoreRefusesAFileFromBeforeBootstrapUnlessForced(t *testing.T) {
	t.Parallel()
	f, err := inspect(file(t, fsmStream(t, state(t))))
	if err != nil {
		t.Fatal(err)
	}
	tg := &fakeTarget{f: liveAt(t, 0, fsm.CommandVersion)}
	applyTo(t, tg.f, 2, &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 10}}})
	root := sha256.Sum256([]byte("root"))
	applyTo(t, tg.f, 3, &pb.Command{Kind: &pb.Command_BootstrapAcl{BootstrapAcl: &pb.BootstrapAclCommand{Token: &pb.AclToken{
		AccessorId: "acc-root", Name: "root", Role: pb.AclRole_ACL_ROLE_MANAGEMENT, SecretHash: root[:]}}}})
	want := tg.f.StateHash()
	scratch := t.TempDir()
	_, err = backup.Restore(context.Background(), tg, tg.f, f, scratch, backup.Options{})
	if !errors.Is(err, backup.ErrBeforeBootstrap) || tg.from.Index != 0 || tg.f.StateHash() != want {
		t.Fatalf("Restore: %v (restore reached Raft: %v); want ErrBeforeBootstrap and nothing changed", err, tg.from.Index != 0)
	}

	o := backup.Options{Force: true, Principal: "ops", Now: takenAt}
	if _, err := backup.Restore(context.Background(), tg, tg.f, f, scratch, o); err != nil {
		t.Fatalf("forced Restore: %v", err)
	}
	if !tg.f.ACLBootstrapped() || tg.f.JobCount() != 2 {
		t.Fatalf("forced restore: bootstrapped %v, %d jobs; want the live ACLs and the file's jobs", tg.f.ACLBootstrapped(), tg.f.JobCount())
	}
	rec := tg.f.ListAudit(fsm.AuditQuery{Limit: 1})[0]
	fields := map[string]string{}
	for _, c := range rec.GetChanges() {
		fields[c.GetField()] = c.GetAfter()
	}
	if rec.GetAction() != fsm.AuditSnapshotRestore || rec.GetPrincipal() != "ops" || fields["force"] != "true" ||
		fields["file.index"] != "42" || fields["file.node_id"] != "n1" || len(fields["file.sha256"]) != 64 {
		t.Fatalf("audit record %v, want the forced restore of the file at index 42 by ops", rec)
	}
}
