package api

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	// live is the state a restore keeps all but the jobs and runs of.
	live       backup.Live
	scratchDir string
	now        func() time.Time
	audit      *AuditSwitch
}

// NewSnapshotService serves SnapshotService from d's Snapshots, Live,
// ScratchDir (all three required) and Now, which stamps saved files and
// the audit record of a restore; d.Audit's switch turns the trail on
// before a restore, so that it is recorded. Who may call it is the auth
// interceptor's business: with ACLs on, both calls need the management
// role.
func NewSnapshotService(d Deps) pb.SnapshotServiceServer {
	d = d.withDefaults()
	return &snapshotService{node: d.Snapshots, live: d.Live, scratchDir: d.ScratchDir, now: d.Now, audit: d.Audit}
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
	size, force, err := receiveChunks(stream, upload)
	if err != nil {
		return s.status(err)
	}
	f, err := backup.Inspect(upload, size)
	if err != nil {
		return badRequest("snapshot file refused, nothing changed: "+err.Error(),
			&errdetails.BadRequest_FieldViolation{Field: "chunk", Description: err.Error()})
	}
	ctx := stream.Context()
	s.audit.ensure(ctx)
	res, err := backup.Restore(ctx, s.node, s.live, f, s.scratchDir, backup.Options{
		Force: force, Principal: PrincipalFrom(ctx).Name, Now: s.now(),
	})
	if err != nil {
		return s.status(err)
	}
	return stream.SendAndClose(&pb.RestoreSnapshotResponse{
		Index:              res.Index,
		FencingCounter:     res.FencingCounter,
		FileFencingCounter: res.FileFencingCounter,
		Jobs:               uint64(res.Snapshot.Jobs),
		OpenRuns:           uint64(res.Snapshot.OpenRuns),
		KeptLiveState:      res.KeptLive,
	})
}

// receiveChunks writes the upload to w and returns its length and the
// first message's force.
func receiveChunks(stream pb.SnapshotService_RestoreSnapshotServer, w io.Writer) (size int64, force bool, err error) {
	for first := true; ; first = false {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return size, force, nil
		}
		if err != nil {
			return size, force, err
		}
		if first {
			force = req.GetForce()
		}
		n, err := w.Write(req.GetChunk())
		size += int64(n)
		if err != nil {
			return size, force, fmt.Errorf("restore: spool the upload: %w", err)
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
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		return s.notLeader()
	case errors.Is(err, backup.ErrBeforeBootstrap):
		return status.Error(codes.FailedPrecondition, err.Error()+
			": set force (raftcron snapshot restore --force) to restore it into the live ACLs anyway")
	}
	return statusOf(err)
}
