package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// snapNode fakes the leader (or a follower) for SnapshotService: its
// snapshot is an FSM's stream, and a restore goes into another FSM, as Raft
// would do on the leader.
type snapNode struct {
	leader   bool
	src      *fsm.FSM
	dst      *fsm.FSM
	restores int
	// restoreErr, when set, fails RestoreSnapshot before prepare.
	restoreErr error

	mu sync.Mutex // guards restores
}

func (n *snapNode) restoresStarted() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.restores
}

func (n *snapNode) IsLeader() bool            { return n.leader }
func (n *snapNode) Leader() (id, addr string) { return "n2", "10.0.0.2:7001" }

func (n *snapNode) TakeSnapshot(context.Context) (cluster.SnapshotInfo, io.ReadCloser, error) {
	if !n.leader {
		return cluster.SnapshotInfo{}, nil, cluster.ErrNotLeader
	}
	data := fsmBytes(n.src)
	return cluster.SnapshotInfo{Index: 12, Term: 4, Size: int64(len(data)), NodeID: "n1"}, io.NopCloser(bytes.NewReader(data)), nil
}

func (n *snapNode) RestoreSnapshot(_ context.Context, _ cluster.SnapshotInfo, prepare cluster.RestoreFunc) (uint64, error) {
	n.mu.Lock()
	n.restores++
	n.mu.Unlock()
	if n.restoreErr != nil {
		return 0, n.restoreErr
	}
	r, _, err := prepare()
	if err != nil {
		return 0, err
	}
	return 77, n.dst.Restore(io.NopCloser(r))
}

func fsmBytes(f *fsm.FSM) []byte {
	snap, err := f.Snapshot()
	if err != nil {
		panic(err)
	}
	var sink bufSink
	if err := snap.Persist(&sink); err != nil {
		panic(err)
	}
	return sink.Bytes()
}

type bufSink struct{ bytes.Buffer }

func (*bufSink) ID() string    { return "buf" }
func (*bufSink) Close() error  { return nil }
func (*bufSink) Cancel() error { return nil }

// jobsFSM holds n jobs.
func jobsFSM(t *testing.T, n int) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	for i := range n {
		c := &pb.Command{ProposedAtUnixNano: testNow.UnixNano(), Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{
			Mode: pb.PutMode_PUT_MODE_CREATE, Spec: validSpec(fmt.Sprintf("job-%05d", i)),
		}}}
		data, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if res := f.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}).(*pb.CommandResult); res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Fatalf("create job %d: %v", i, res)
		}
	}
	return f
}

// counterAt is a live state with no jobs, the fencing counter at counter,
// at this build's cluster version.
func counterAt(t *testing.T, counter uint64) *fsm.FSM {
	t.Helper()
	r, _, err := fsm.WithCounterFloor(bytes.NewReader(fsmBytes(fsm.New())), counter)
	if err != nil {
		t.Fatal(err)
	}
	f := fsm.New()
	if err := f.Restore(io.NopCloser(r)); err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(fsm.SetClusterVersion(fsm.CommandVersion))
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data})
	return f
}

// snapshotClient serves SnapshotService from node, whose dst (a fresh
// state if nil) is the live state restores keep.
func snapshotClient(t *testing.T, node *snapNode, scratch string) pb.SnapshotServiceClient {
	t.Helper()
	if node.dst == nil {
		node.dst = fsm.New()
	}
	gs := grpc.NewServer()
	pb.RegisterSnapshotServiceServer(gs, NewSnapshotService(Deps{
		Snapshots: node, Live: node.dst, ScratchDir: scratch, Now: func() time.Time { return testNow },
	}))
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
	})
	return pb.NewSnapshotServiceClient(conn)
}

// save calls SaveSnapshot and returns the file and the number of chunks.
func save(t *testing.T, c pb.SnapshotServiceClient) ([]byte, int, error) {
	t.Helper()
	stream, err := c.SaveSnapshot(testCtx(t), &pb.SaveSnapshotRequest{})
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	chunks := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), chunks, nil
		}
		if err != nil {
			return nil, chunks, err
		}
		chunks++
		buf.Write(resp.GetChunk())
	}
}

func upload(t *testing.T, c pb.SnapshotServiceClient, data []byte) (*pb.RestoreSnapshotResponse, error) {
	t.Helper()
	return uploadForced(testCtx(t), c, data, false)
}

// uploadForced sends force in the first message, as the CLI does.
func uploadForced(ctx context.Context, c pb.SnapshotServiceClient, data []byte, force bool) (*pb.RestoreSnapshotResponse, error) {
	stream, err := c.RestoreSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	for first := true; len(data) > 0; first = false {
		n := min(len(data), 64<<10)
		if err := stream.Send(&pb.RestoreSnapshotRequest{Chunk: data[:n], Force: first && force}); err != nil {
			break // the server answered early; CloseAndRecv says why
		}
		data = data[n:]
	}
	return stream.CloseAndRecv()
}

func wantNotLeader(t *testing.T, err error) {
	t.Helper()
	st := wantCode(t, err, codes.Unavailable)
	info := errorInfo(st)
	if info.GetReason() != cluster.ReasonNotLeader || info.GetMetadata()[cluster.MetadataLeaderAddress] != "10.0.0.2:7001" {
		t.Fatalf("error info %v, want NOT_LEADER naming the leader's address", info)
	}
}

func TestSaveSnapshotStreamsAVerifiedFileInChunks(t *testing.T) {
	node := &snapNode{leader: true, src: jobsFSM(t, 3000)}
	data, chunks, err := save(t, snapshotClient(t, node, t.TempDir()))
	if err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	f, err := backup.Inspect(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("the saved file does not inspect: %v", err)
	}
	if f.Header.GetIndex() != 12 || f.Header.GetTerm() != 4 || f.Header.GetNodeId() != "n1" ||
		!f.Header.GetTakenAt().AsTime().Equal(testNow) || f.Snapshot.Jobs != 3000 {
		t.Fatalf("header %v, summary %+v", f.Header, f.Snapshot)
	}
	if want := len(data)/snapshotChunk + 1; chunks != want {
		t.Errorf("%d bytes in %d chunks, want %d of at most %d bytes", len(data), chunks, want, snapshotChunk)
	}
}

func TestSnapshotCallsOnAFollowerNameTheLeader(t *testing.T) {
	scratch := t.TempDir()
	node := &snapNode{src: jobsFSM(t, 1), dst: fsm.New()}
	c := snapshotClient(t, node, scratch)
	_, _, err := save(t, c)
	wantNotLeader(t, err)

	leader := &snapNode{leader: true, src: jobsFSM(t, 1)}
	file, _, err := save(t, snapshotClient(t, leader, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = upload(t, c, file)
	wantNotLeader(t, err)
	if node.restoresStarted() != 0 {
		t.Fatal("a follower started a restore")
	}
	// Leadership lost between the check and the restore: the same answer.
	node.leader, node.restoreErr = true, fmt.Errorf("restore: %w", cluster.ErrNotLeader)
	_, err = upload(t, c, file)
	wantNotLeader(t, err)
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Fatalf("scratch files left behind: %v", left)
	}
}

func TestRestoreSnapshotRefusesABadFileWhole(t *testing.T) {
	leader := &snapNode{leader: true, src: jobsFSM(t, 5)}
	file, _, err := save(t, snapshotClient(t, leader, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	node := &snapNode{leader: true, dst: fsm.New()}
	c := snapshotClient(t, node, scratch)
	corrupt := bytes.Clone(file)
	corrupt[len(corrupt)/2] ^= 0xff
	for name, bad := range map[string][]byte{
		"truncated": file[:len(file)-10],
		"corrupt":   corrupt,
		"version":   append([]byte("raftcron snapshot v9\n"), file[len("raftcron snapshot v1\n"):]...),
		"empty":     nil,
	} {
		_, err := upload(t, c, bad)
		st := wantCode(t, err, codes.InvalidArgument)
		if fields := badRequestFields(t, st); len(fields) != 1 || fields[0] != "chunk" {
			t.Errorf("%s: fields %v, want [chunk]", name, fields)
		}
	}
	if node.restoresStarted() != 0 || node.dst.JobCount() != 0 {
		t.Fatalf("a refused file reached the restore (%d restores, %d jobs)", node.restoresStarted(), node.dst.JobCount())
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Fatalf("scratch files left behind: %v", left)
	}
}

func TestRestoreSnapshotKeepsTheHigherCounter(t *testing.T) {
	leader := &snapNode{leader: true, src: jobsFSM(t, 4)}
	file, _, err := save(t, snapshotClient(t, leader, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	node := &snapNode{leader: true, dst: counterAt(t, 9000)}
	res, err := upload(t, snapshotClient(t, node, t.TempDir()), file)
	if err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	want := &pb.RestoreSnapshotResponse{Index: 77, FencingCounter: 9000, FileFencingCounter: 0, Jobs: 4, KeptLiveState: true}
	if !proto.Equal(res, want) {
		t.Fatalf("response %v, want %v", res, want)
	}
	if node.dst.FencingToken() != 9000 || node.dst.JobCount() != 4 {
		t.Fatalf("restored state: counter %d, %d jobs", node.dst.FencingToken(), node.dst.JobCount())
	}
}
