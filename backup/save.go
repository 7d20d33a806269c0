package backup

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Source is the leader a backup is saved from.
type Source interface {
	TakeSnapshot(ctx context.Context) (cluster.SnapshotInfo, io.ReadCloser, error)
}

// Save has src snapshot everything committed before the call and writes it
// to w as a backup file taken at now. The snapshot streams from the
// leader's disk: memory stays bounded whatever its size.
func Save(ctx context.Context, src Source, now func() time.Time, w io.Writer) (*pb.BackupHeader, [sha256.Size]byte, error) {
	info, rc, err := src.TakeSnapshot(ctx)
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	defer rc.Close()
	h := &pb.BackupHeader{
		Index:   info.Index,
		Term:    info.Term,
		TakenAt: timestamppb.New(now()),
		NodeId:  info.NodeID,
		Size:    uint64(info.Size),
	}
	sum, err := Write(w, h, rc)
	if err != nil {
		return nil, sum, fmt.Errorf("backup: save snapshot at index %d: %w", info.Index, err)
	}
	return h, sum, nil
}
