package fsm

import (
	"testing"

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
		if fd.Name() == "cursor_unix" {
			continue
		}
		st := &pb.JobStatus{CursorUnix: 7}
		m := st.ProtoReflect()
		if fd.IsList() {
			m.Mutable(fd).List().Append(scalar(fd, 1))
		} else {
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
