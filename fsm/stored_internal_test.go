package fsm

import (
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// neverFired decides which statuses may be shared, so it must see every
// field: a status with any field but the cursor set is not a fresh one.
func TestNeverFiredLooksAtEveryField(t *testing.T) {
	if !neverFired(&pb.JobStatus{CursorUnix: 7}) {
		t.Fatal("a status with only the cursor set is not fresh")
	}
	fields := (&pb.JobStatus{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Name() == "cursor_unix" || fd.Name() == "first_generation" { // the key of a fresh status
			continue
		}
		st := &pb.JobStatus{CursorUnix: 7}
		m := st.ProtoReflect()
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := m.Mutable(fd).List()
			l.Append(l.NewElement())
		case fd.IsList():
			m.Mutable(fd).List().Append(scalar(fd, 1))
		case fd.Kind() == protoreflect.MessageKind:
			m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
		default:
			m.Set(fd, scalar(fd, 1))
		}
		if neverFired(st) {
			t.Errorf("neverFired ignores field %s", fd.Name())
		}
	}
	st := &pb.JobStatus{CursorUnix: 7}
	st.ProtoReflect().SetUnknown([]byte{0xf8, 0x3e, 0x01}) // field 999, varint 1
	if neverFired(st) {
		t.Error("neverFired ignores unknown fields")
	}
}

func TestHasLabels(t *testing.T) {
	spec := &pb.JobSpec{Labels: map[string]string{"a": "1", "b": "", "c": "3"}}
	storeSpec(spec)
	if spec.Labels != nil {
		t.Fatal("storeSpec left the labels map")
	}
	cases := []struct {
		want  map[string]string
		match bool
	}{
		{nil, true},
		{map[string]string{"a": "1"}, true},
		{map[string]string{"a": "1", "b": "", "c": "3"}, true},
		{map[string]string{"b": ""}, true},
		{map[string]string{"a": "2"}, false},
		{map[string]string{"d": ""}, false},
		{map[string]string{"a": "1", "d": "4"}, false},
		{map[string]string{"c": "3", "a": "x"}, false},
	}
	for _, c := range cases {
		if got := hasLabels(spec, c.want); got != c.match {
			t.Errorf("hasLabels(%v) = %v, want %v", c.want, got, c.match)
		}
	}
	if hasLabels(&pb.JobSpec{}, map[string]string{"a": "1"}) {
		t.Error("a spec without labels matched")
	}
}

func TestSharerSharesOnlyEqualValues(t *testing.T) {
	sh := newSharer()
	spec := func(window time.Duration, url string) *pb.JobSpec {
		return &pb.JobSpec{
			Schedule: "0 5 * * *",
			Http:     &pb.HttpTarget{Url: url},
			Catchup:  &pb.Catchup{Window: durationpb.New(window), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
			Retry:    &pb.Retry{MaxAttempts: 3},
			Deadline: durationpb.New(window),
		}
	}
	a, b, c := spec(time.Minute, "http://x/"), spec(time.Minute, "http://x/"), spec(time.Hour, "http://y/")
	for _, s := range []*pb.JobSpec{a, b, c} {
		sh.spec(s)
	}
	if a.Catchup != b.Catchup || a.Retry != b.Retry || a.Deadline != b.Deadline {
		t.Error("equal policy messages are not shared")
	}
	if a.Http != b.Http || a.Http == c.Http {
		t.Error("equal webhook targets are not shared, or different ones are")
	}
	if unsafe.StringData(a.Http.Url) != unsafe.StringData(b.Http.Url) || unsafe.StringData(a.Schedule) != unsafe.StringData(c.Schedule) {
		t.Error("equal strings are not shared")
	}
	if a.Catchup == c.Catchup || a.Deadline == c.Deadline || a.Http.GetUrl() != "http://x/" || c.Catchup.GetWindow().AsDuration() != time.Hour ||
		c.Deadline.AsDuration() != time.Hour || c.Http.Url != "http://y/" {
		t.Errorf("different values were shared or changed: %v", c)
	}
	if c.Retry != a.Retry {
		t.Error("equal retries in otherwise different specs are not shared")
	}
}
