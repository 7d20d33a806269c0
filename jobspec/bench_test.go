package jobspec

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// BenchmarkValidate is the check every job write pays before it is
// proposed: a minimal HTTP job (as registered in bulk) and a full one.
func BenchmarkValidate(b *testing.B) {
	minimal := &pb.JobSpec{Name: "reg-c64-00001234", Schedule: "0 0 1 1 *", Http: &pb.HttpTarget{Url: "http://127.0.0.1:9/never"}}
	for _, c := range []struct {
		name string
		spec *pb.JobSpec
	}{{"minimal", minimal}, {"full", fullJob()}} {
		spec := proto.CloneOf(c.spec)
		Normalize(spec)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(spec, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
