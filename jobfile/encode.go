package jobfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// EncodeYAML writes specs in the job file format: one object for one spec,
// a list for more. Empty fields are left out. Decode reads the result back
// to specs proto.Equal to the input.
func EncodeYAML(specs ...*pb.JobSpec) ([]byte, error) {
	v, err := fileValue(specs)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(v)
}

// EncodeJSON is EncodeYAML's JSON twin, indented by two spaces.
func EncodeJSON(specs ...*pb.JobSpec) ([]byte, error) {
	v, err := fileValue(specs)
	if err != nil {
		return nil, err
	}
	return indentedJSON(v)
}

// indentedJSON is v written as the file's JSON, indented by two spaces.
func indentedJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, v, "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ToMap is spec in the job file's JSON form as a generic value, for
// callers that embed or compare specs (an API body, an audit diff):
// objects are map[string]any, lists []any, integers int64 or uint64, every
// other value a string or a bool. encoding/json writes it as EncodeJSON
// does, with the keys sorted; FromMap reads it back.
func ToMap(spec *pb.JobSpec) (map[string]any, error) {
	o, err := encodeSpec(spec, "")
	if err != nil {
		return nil, err
	}
	return o.toMap(), nil
}

// Value is one value of fd (a singular field's, a list's element or a map's
// value) in ToMap's generic form: an enum by its file name ("" for the
// zero value), a duration or timestamp as its text, a message as an
// object. It fails, naming the field, where ToMap would, and for a kind
// outside the file's rules (ErrUnsupported). fd need not be JobSpec's: the
// audit trail renders an ACL token's fields by the same rules.
func Value(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	if err := checkField(fd, map[protoreflect.FullName]bool{}); err != nil {
		return nil, err
	}
	e, err := encodeValue(fd, v, string(fd.Name()))
	if err != nil {
		return nil, err
	}
	return generic(e), nil
}

// fileValue is the value to marshal: one object, or a list of them.
func fileValue(specs []*pb.JobSpec) (any, error) {
	if len(specs) == 0 {
		return nil, ErrNoSpecs
	}
	objects := make([]object, len(specs))
	for i, s := range specs {
		path := ""
		if len(specs) > 1 {
			path = fmt.Sprintf("jobs[%d]", i)
		}
		o, err := encodeSpec(s, path)
		if err != nil {
			return nil, err
		}
		objects[i] = o
	}
	if len(objects) == 1 {
		return objects[0], nil
	}
	return objects, nil
}

func encodeSpec(s *pb.JobSpec, path string) (object, error) {
	if err := schemaErr(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, &FieldError{Field: path, Rule: "nil job spec"}
	}
	return encodeMessage(s.ProtoReflect(), path)
}

// object is a message in the file: its set fields, in declaration order.
type object []pair

type pair struct {
	name  string
	value any
}

// encodeMessage writes the fields m has. Values the format cannot carry
// faithfully (an enum number without a name, a duration beyond
// time.Duration's range, a timestamp outside RFC 3339's years) are errors,
// so that every encoded file decodes back to the same spec.
func encodeMessage(m protoreflect.Message, path string) (object, error) {
	fields := m.Descriptor().Fields()
	o := object{}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v, err := encodeField(fd, m.Get(fd), join(path, string(fd.Name())))
		if err != nil {
			return nil, err
		}
		o = append(o, pair{string(fd.Name()), v})
	}
	return o, nil
}

func encodeField(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) (any, error) {
	switch {
	case fd.IsList():
		list := v.List()
		out := make([]any, list.Len())
		for i := range list.Len() {
			e, err := encodeValue(fd, list.Get(i), elementPath(fd, path, fmt.Sprint(i)))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case fd.IsMap():
		out := make(map[string]any, v.Map().Len())
		for _, k := range sortedKeys(v.Map()) {
			e, err := encodeValue(fd.MapValue(), v.Map().Get(k), elementPath(fd.MapValue(), path, k.String()))
			if err != nil {
				return nil, err
			}
			out[k.String()] = e
		}
		return out, nil
	}
	return encodeValue(fd, v, path)
}

// elementPath names a list element or map value in errors: a message by
// its index or key, a scalar by its list or map (as encoding/json does).
func elementPath(fd protoreflect.FieldDescriptor, path, at string) string {
	if fd.Kind() == protoreflect.MessageKind && !isTextMessage(fd.Message()) {
		return path + "[" + at + "]"
	}
	return path
}

// sortedKeys makes the first error of a map the same on every call.
func sortedKeys(m protoreflect.Map) []protoreflect.MapKey {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// encodeValue writes one value of fd's kind.
func encodeValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) (any, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.EnumKind:
		return encodeEnum(fd.Enum(), v.Enum(), path)
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case durationName:
			return encodeDuration(v.Message(), path)
		case timestampName:
			return encodeTimestamp(v.Message(), path)
		}
		return encodeMessage(v.Message(), path)
	}
	if _, signed, _ := integerKind(fd.Kind()); signed {
		return v.Int(), nil
	}
	return v.Uint(), nil
}

// encodeEnum writes a value's file name; the zero value, which a
// singular field never writes, is "".
func encodeEnum(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber, path string) (string, error) {
	if n == 0 {
		return "", nil
	}
	ev := ed.Values().ByNumber(n)
	if ev == nil {
		return "", &FieldError{Field: path, Rule: fmt.Sprintf("unknown value %d (want %s)", n, enumWant(ed))}
	}
	return enumFileName(ev), nil
}

// secondsNanos reads a Duration or Timestamp message.
func secondsNanos(m protoreflect.Message) (int64, int32) {
	fields := m.Descriptor().Fields()
	return m.Get(fields.ByName("seconds")).Int(), int32(m.Get(fields.ByName("nanos")).Int())
}

// encodeDuration writes time.Duration syntax ("1m0s"); a set zero
// duration is "0s", so that it does not turn into an absent one.
func encodeDuration(m protoreflect.Message, path string) (string, error) {
	seconds, nanos := secondsNanos(m)
	d := &durationpb.Duration{Seconds: seconds, Nanos: nanos}
	// AsDuration saturates outside ±292 years; converting back exposes it.
	if d.CheckValid() != nil || !proto.Equal(durationpb.New(d.AsDuration()), d) {
		return "", &FieldError{Field: path, Rule: fmt.Sprintf("duration %ds %dns out of range", seconds, nanos)}
	}
	return d.AsDuration().String(), nil
}

// encodeTimestamp writes RFC 3339 in UTC with as many fractional digits
// as needed.
func encodeTimestamp(m protoreflect.Message, path string) (string, error) {
	seconds, nanos := secondsNanos(m)
	ts := &timestamppb.Timestamp{Seconds: seconds, Nanos: nanos}
	if err := ts.CheckValid(); err != nil {
		return "", &FieldError{Field: path, Rule: "invalid timestamp: " + err.Error()}
	}
	return ts.AsTime().UTC().Format(time.RFC3339Nano), nil
}

// MarshalYAML keeps the fields in order.
func (o object) MarshalYAML() (any, error) {
	ms := make(yaml.MapSlice, len(o))
	for i, m := range o {
		ms[i] = yaml.MapItem{Key: m.name, Value: m.value}
	}
	return ms, nil
}

// MarshalJSON keeps the fields in order and, like EncodeJSON, leaves
// "<", ">" and "&" as they are, so a body like {"a":"<b>"} stays readable.
func (o object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeJSON(&buf, m.name, ""); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		if err := writeJSON(&buf, m.value, ""); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, v any, indent string) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	return enc.Encode(v)
}

// toMap is the generic form ToMap documents.
func (o object) toMap() map[string]any {
	out := make(map[string]any, len(o))
	for _, m := range o {
		out[m.name] = generic(m.value)
	}
	return out
}

func generic(v any) any {
	switch v := v.(type) {
	case object:
		return v.toMap()
	case []any:
		for i, e := range v {
			v[i] = generic(e)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = generic(e)
		}
	}
	return v
}
