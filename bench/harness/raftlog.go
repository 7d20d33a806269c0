package harness

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// LogSummary classifies a range of Raft log entries by command.
type LogSummary struct {
	From, To      uint64 `json:"-"`
	Entries       int    `json:"entries"`
	FireBatches   int    `json:"fire_batch_entries"`
	Fires         int    `json:"fires"`
	Misses        int    `json:"misses"`
	FiresPerBatch []int  `json:"fires_per_fire_batch"`
	// FirstFireBatchAt is the proposer's stamp on the first FireBatch:
	// when the leader's tick began.
	FirstFireBatchAt time.Time `json:"first_fire_batch_proposed_at"`
	CompleteBatches  int       `json:"complete_batch_entries"`
	Completions      int       `json:"completions"`
	PutJobs          int       `json:"put_job_entries"`
	OtherCommands    int       `json:"other_command_entries"`
	// RaftInternal are no-op, barrier and configuration entries.
	RaftInternal int `json:"raft_internal_entries"`
	// Missing counts indexes absent from the store (compacted away).
	Missing int `json:"missing"`
}

// SummarizeLog reads entries (from, to] of a node's Raft log. The node must
// not be running: the store is opened read-only, but bbolt locks the file.
func SummarizeLog(dataDir string, from, to uint64) (LogSummary, error) {
	sum := LogSummary{From: from, To: to}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dataDir, "raft.db"),
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: 2 * time.Second},
	})
	if err != nil {
		return sum, fmt.Errorf("open raft log in %s: %w", dataDir, err)
	}
	defer func() { _ = store.Close() }()
	for i := from + 1; i <= to; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			sum.Missing++
			continue
		}
		sum.Entries++
		if l.Type != raft.LogCommand {
			sum.RaftInternal++
			continue
		}
		sum.add(l.Data)
	}
	return sum, nil
}

func (s *LogSummary) add(data []byte) {
	var c pb.Command
	if err := proto.Unmarshal(data, &c); err != nil {
		s.OtherCommands++
		return
	}
	switch k := c.GetKind().(type) {
	case *pb.Command_FireBatch:
		s.FireBatches++
		n := len(k.FireBatch.GetFires())
		s.Fires += n
		s.Misses += len(k.FireBatch.GetMisses())
		s.FiresPerBatch = append(s.FiresPerBatch, n)
		if s.FireBatches == 1 {
			s.FirstFireBatchAt = time.Unix(0, c.GetProposedAtUnixNano()).UTC()
		}
	case *pb.Command_CompleteBatch:
		s.CompleteBatches++
		s.Completions += len(k.CompleteBatch.GetCompletions())
	case *pb.Command_PutJob:
		s.PutJobs++
	default:
		s.OtherCommands++
	}
}
