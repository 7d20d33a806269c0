package api

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// snapshotChunk is the size of the chunks SaveSnapshot sends, well under
// gRPC's 4 MiB message limit.
const snapshotChunk = 256 << 10

// SnapshotNode is the Raft node as SnapshotService needs it: both calls
// act on the leader, and a follower points the client there.
type SnapshotNode interface {
	backup.Source
	backup.Target
	IsLeader() bool
	Leader() (id, addr string)
}

type snapshotService struct {
	pb.UnimplementedSnapshotServiceServer
	node SnapshotNode
	// counter is the live fencing counter, which a restore never lowers.
	counter    backup.Counter
	scratchDir string
	now        func() time.Time
}

// NewSnapshotService serves SnapshotService from d's Snapshots, Registry
// (its fencing counter), ScratchDir (all three required) and Now, which
// stamps saved files. Who may call it is the auth interceptor's business:
// with ACLs on, both calls need the management role.
func NewSnapshotService(d Deps) pb.SnapshotServiceServer {
	d = d.withDefaults()
	return &snapshotService{node: d.Snapshots, counter: d.Registry, scratchDir: d.ScratchDir, now: d.Now}
}

func (s *snapshotService) SaveSnapshot(_ *pb.SaveSnapshotRequest, stream pb.SnapshotService_SaveSnapshotServer) error {
	if !s.node.IsLeader() {
		return s.notLeader()
	}
	w := bufio.NewWriterSize(chunkSender(stream.Send), snapshotChunk)
	_, _, err := backup.Save(stream.Context(), s.node, s.now, w)
	if err == nil {
		err = w.Flush()
	}
	return s.status(err)
}

// chunkSender sends each write as one chunk.
type chunkSender func(*pb.SaveSnapshotResponse) error

func (send chunkSender) Write(p []byte) (int, error) {
	// gRPC may still read the message after Send returns: hand it a copy.
	if err := send(&pb.SaveSnapshotResponse{Chunk: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *snapshotService) RestoreSnapshot(stream pb.SnapshotService_RestoreSnapshotServer) error {
	if !s.node.IsLeader() {
		return s.notLeader() // before a byte of the upload is read
	}
	upload, err := os.CreateTemp(s.scratchDir, "upload-*.snapshot")
	if err != nil {
		return s.status(fmt.Errorf("restore: spool the upload: %w", err))
	}
	defer func() {
		_ = upload.Close()
		_ = os.Remove(upload.Name())
	}()
	size, err := receiveChunks(stream, upload)
	if err != nil {
		return s.status(err)
	}
	f, err := backup.Inspect(upload, size)
	if err != nil {
		return badRequest("snapshot file refused, nothing changed: "+err.Error(),
			&errdetails.BadRequest_FieldViolation{Field: "chunk", Description: err.Error()})
	}
	res, err := backup.Restore(stream.Context(), s.node, s.counter, f, s.scratchDir)
	if err != nil {
		return s.status(err)
	}
	return stream.SendAndClose(&pb.RestoreSnapshotResponse{
		Index:              res.Index,
		FencingCounter:     res.FencingCounter,
		FileFencingCounter: res.FileFencingCounter,
		Jobs:               uint64(res.Snapshot.Jobs),
		OpenRuns:           uint64(res.Snapshot.OpenRuns),
	})
}

// receiveChunks writes the upload to w and returns its length.
func receiveChunks(stream pb.SnapshotService_RestoreSnapshotServer, w io.Writer) (int64, error) {
	var size int64
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return size, nil
		}
		if err != nil {
			return size, err
		}
		n, err := w.Write(req.GetChunk())
		size += int64(n)
		if err != nil {
			return size, fmt.Errorf("restore: spool the upload: %w", err)
		}
	}
}

// notLeader names the leader, so the client can call it: unlike the
// registry's calls, these are not forwarded (a snapshot is too large to
// pass through a second node for nothing).
func (s *snapshotService) notLeader() error {
	id, addr := s.node.Leader()
	return cluster.NotLeaderStatus("this node is not the leader: snapshots are saved and restored on the leader", id, addr)
}

func (s *snapshotService) status(err error) error {
	if errors.Is(err, cluster.ErrNotLeader) {
		return s.notLeader()
	}
	return statusOf(err)
}
