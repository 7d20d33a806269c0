package jobfile

import (
	"encoding/json"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fill sets every field of m, recursively, to a value other than its
// zero: two entries in each list and map, a non-zero value of each enum,
// and of a oneof its first field. Values come from a counter, so two
// fields swapped by a codec do not compare equal. Descriptors drive it,
// so a field added to the proto is filled without a change here.
func fill(m protoreflect.Message, n *int, depth int) {
	if depth > 8 {
		return // a recursive message; allSet reports what stayed empty
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && o.Fields().Get(0) != fd {
			continue
		}
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for range 2 {
				list.Append(fillValue(fd, list.NewElement, n, depth))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range 2 {
				key := fillValue(fd.MapKey(), nil, n, depth).MapKey()
				mp.Set(key, fillValue(fd.MapValue(), mp.NewValue, n, depth))
			}
		default:
			m.Set(fd, fillValue(fd, func() protoreflect.Value { return m.NewField(fd) }, n, depth))
		}
	}
}

// fillValue is a non-zero value of fd's kind. Integers are small and
// positive, which also makes a valid Duration and Timestamp.
func fillValue(fd protoreflect.FieldDescriptor, newValue func() protoreflect.Value, n *int, depth int) protoreflect.Value {
	*n++
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s #%d: 'x' \"y\" & <z>", fd.Name(), *n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(*n)})
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		return protoreflect.ValueOfEnum(values.Get(values.Len() - 1 - *n%max(values.Len()-1, 1)).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(*n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(*n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(*n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(*n))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(*n) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(*n) + 0.5)
	}
	v := newValue()
	fill(v.Message(), n, depth+1)
	return v
}

// allSet fails t for every field of m that fill left unset, so that the
// round trip below cannot pass by testing less than the whole message.
func allSet(t *testing.T, m protoreflect.Message, path string) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && o.Fields().Get(0) != fd {
			continue
		}
		at := join(path, string(fd.Name()))
		if !m.Has(fd) {
			t.Errorf("%s: not filled", at)
			continue
		}
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for j := range m.Get(fd).List().Len() {
				allSet(t, m.Get(fd).List().Get(j).Message(), fmt.Sprintf("%s[%d]", at, j))
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				allSet(t, v.Message(), at+"["+k.String()+"]")
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			allSet(t, m.Get(fd).Message(), at)
		}
	}
}

// fullyFilledSpec is a JobSpec with every field set, however many the
// proto declares.
func fullyFilledSpec(t *testing.T) *pb.JobSpec {
	t.Helper()
	spec := &pb.JobSpec{}
	n := 0
	fill(spec.ProtoReflect(), &n, 0)
	allSet(t, spec.ProtoReflect(), "")
	return spec
}

// Every field of JobSpec, present and future, survives every path through
// the job file: a field the format drops or cannot carry fails here.
func TestEveryFieldRoundTrips(t *testing.T) {
	spec := fullyFilledSpec(t)
	viaMap := func(s *pb.JobSpec) (*pb.JobSpec, string, error) {
		m, err := ToMap(s)
		if err != nil {
			return nil, "", err
		}
		got, err := FromMap(m)
		return got, fmt.Sprint(m), err
	}
	viaJSONMap := func(s *pb.JobSpec) (*pb.JobSpec, string, error) {
		m, err := ToMap(s)
		if err != nil {
			return nil, "", err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil, "", err
		}
		got, err := FromJSON(data)
		return got, string(data), err
	}
	viaFile := func(encode func(...*pb.JobSpec) ([]byte, error)) func(*pb.JobSpec) (*pb.JobSpec, string, error) {
		return func(s *pb.JobSpec) (*pb.JobSpec, string, error) {
			data, err := encode(s)
			if err != nil {
				return nil, "", err
			}
			got, err := Decode(data)
			if err == nil && len(got) != 1 {
				err = fmt.Errorf("decoded %d specs", len(got))
			}
			if err != nil {
				return nil, string(data), err
			}
			return got[0], string(data), nil
		}
	}
	for name, trip := range map[string]func(*pb.JobSpec) (*pb.JobSpec, string, error){
		"yaml": viaFile(EncodeYAML), "json": viaFile(EncodeJSON), "ToMap/FromMap": viaMap, "ToMap/FromJSON": viaJSONMap,
	} {
		t.Run(name, func(t *testing.T) {
			got, form, err := trip(spec)
			if err != nil {
				t.Fatalf("round trip: %v\n%s", err, form)
			}
			if !proto.Equal(got, spec) {
				t.Fatalf("round trip changed the spec\nfile form:\n%s\ngot  %v\nwant %v", form, got, spec)
			}
		})
	}
}
