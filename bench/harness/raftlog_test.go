package harness

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestSummarizeLogClassifiesEntries(t *testing.T) {
	dir := t.TempDir()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(c *pb.Command) []byte {
		b, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fires := []*pb.Fire{{Job: "a"}, {Job: "b"}}
	logs := []*raft.Log{
		{Index: 1, Type: raft.LogNoop},
		{Index: 2, Type: raft.LogCommand, Data: cmd(&pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{}}})},
		{Index: 3, Type: raft.LogCommand, Data: cmd(&pb.Command{ProposedAtUnixNano: 5e9, Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{Fires: fires}}})},
		{Index: 4, Type: raft.LogCommand, Data: cmd(&pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{Completions: []*pb.Completion{{}, {}, {}}}}})},
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeLog(dir, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries != 3 || s.Missing != 1 || s.PutJobs != 1 || s.FireBatches != 1 || s.Fires != 2 ||
		s.CompleteBatches != 1 || s.Completions != 3 || s.FirstFireBatchAt.Unix() != 5 {
		t.Errorf("summary of (1, 5] = %+v", s)
	}
}
