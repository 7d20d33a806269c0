package fsm_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// BenchmarkApplyPut measures Apply of a create of a new job, including
// decoding the entry, as Raft drives it.
func BenchmarkApplyPut(b *testing.B) {
	data := make([][]byte, b.N)
	for i := range data {
		c := createCmd(testSpec(fmt.Sprintf("job-%09d", i)))
		c.ProposedAtUnixNano = baseTime.UnixNano()
		d, err := proto.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		data[i] = d
	}
	f := fsm.New()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range data {
		r := f.Apply(&raft.Log{Index: uint64(i + 1), Data: data[i]}).(*pb.CommandResult)
		if r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			b.Fatalf("code %v: %s", r.GetCode(), r.GetMessage())
		}
	}
}
