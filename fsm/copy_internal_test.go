package fsm

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fill sets every field of m, recursively, to a value derived from seed, so
// that two fills with different seeds differ in every scalar.
func fill(m protoreflect.Message, seed int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := range 2 {
				if fd.Kind() == protoreflect.MessageKind {
					e := l.NewElement()
					fill(e.Message(), seed+j)
					l.Append(e)
				} else {
					l.Append(scalar(fd, seed+j))
				}
			}
		case fd.IsMap():
			// None of the copied messages has a map field; a new one fails
			// the equality check below, which is the point.
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message(), seed)
		default:
			m.Set(fd, scalar(fd, seed))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor, seed int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(seed%2 == 1)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(seed%3 + 1))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(seed + int(fd.Number())))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(seed*1000 + int(fd.Number())))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(seed + int(fd.Number())))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(seed*1000 + int(fd.Number())))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(fd.Name()) + string(rune('a'+seed)))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(seed), byte(fd.Number())})
	}
	panic("no scalar for " + fd.Kind().String())
}

// The hand-written copies must carry every field, and the deep ones must
// share nothing with their source.
func TestCopiesCoverEveryField(t *testing.T) {
	run := &pb.Run{}
	fill(run.ProtoReflect(), 1)
	status := &pb.JobStatus{}
	fill(status.ProtoReflect(), 1)
	job := &pb.Job{}
	fill(job.ProtoReflect(), 1)

	if c := copyRun(run); !proto.Equal(c, run) {
		t.Errorf("copyRun dropped a field:\n got %v\nwant %v", c, run)
	}
	if c := copyAttempt(run.GetAttempts()[0]); !proto.Equal(c, run.GetAttempts()[0]) {
		t.Errorf("copyAttempt dropped a field:\n got %v\nwant %v", c, run.GetAttempts()[0])
	}
	if c := copyStatus(status); !proto.Equal(c, status) {
		t.Errorf("copyStatus dropped a field:\n got %v\nwant %v", c, status)
	}
	withStatus := &pb.Job{}
	setWithStatus(withStatus, job, job.GetStatus())
	if c := withStatus; !proto.Equal(c, job) {
		t.Errorf("setWithStatus dropped a field:\n got %v\nwant %v", c, job)
	}

	want := proto.Clone(run)
	c := cloneRun(run)
	if !proto.Equal(c, run) {
		t.Fatalf("cloneRun dropped a field:\n got %v\nwant %v", c, run)
	}
	c.GetAttempts()[0].GetOutput()[0] = 0xee
	fill(c.ProtoReflect(), 2)
	if !proto.Equal(run, want) {
		t.Error("cloneRun shares memory with its source")
	}
	wantStatus := proto.Clone(status)
	cs := cloneStatus(status)
	cs.OpenRunIds[0] = "changed"
	if !proto.Equal(status, wantStatus) {
		t.Error("cloneStatus shares open_run_ids with its source")
	}
	if cloneRun(nil) != nil || cloneStatus(nil) != nil {
		t.Error("clones of nil are not nil")
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	st := &state{version: version2} // the stored backoffs, as they are
	r := &pb.Retry{InitialBackoff: durationpb.New(3 * time.Second), MaxBackoff: durationpb.New(20 * time.Second)}
	for n, want := range []time.Duration{3, 6, 12, 20, 20} {
		if got := backoff(st, r, n+1); got != want*time.Second {
			t.Errorf("backoff after attempt %d = %v, want %v", n+1, got, want*time.Second)
		}
	}
	if got := backoff(st, nil, 60); got != 0 {
		t.Errorf("backoff without stored backoffs %v, want 0: the FSM keeps no defaults", got)
	}
	huge := &pb.Retry{InitialBackoff: durationpb.New(time.Duration(1 << 62)), MaxBackoff: durationpb.New(time.Duration(1<<63 - 1))}
	if got := backoff(st, huge, 1000); got != time.Duration(1<<63-1) {
		t.Errorf("backoff near the int64 limit = %v, want the cap without overflow", got)
	}
	neg := &pb.Retry{InitialBackoff: durationpb.New(-time.Second), MaxBackoff: durationpb.New(time.Minute)}
	if got := backoff(st, neg, 3); got != 0 {
		t.Errorf("negative initial backoff gave %v, want 0", got)
	}
	if got := addSaturating(1<<62, time.Duration(1<<62)); got != 1<<63-1 {
		t.Errorf("addSaturating overflowed to %d", got)
	}
}

func TestFloorDivRoundsDown(t *testing.T) {
	cases := []struct{ a, b, want int64 }{
		{1_500_000_000, 1e9, 1}, {-1, 1e9, -1}, {-1e9, 1e9, -1}, {-1e9 - 1, 1e9, -2}, {0, 1e9, 0},
	}
	for _, c := range cases {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
