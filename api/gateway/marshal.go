package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// jobSpecName is the message the API speaks in the job file's form.
var jobSpecName = (&pb.JobSpec{}).ProtoReflect().Descriptor().FullName()

// Marshaler is the JSON API's one format: proto JSON with the proto's field
// names for every message, except that a JobSpec, wherever it sits in a
// request or a response, is in the job file's JSON form (package jobfile:
// lowercase enums, Go durations, the same field names), as `job get -o
// json` prints it and `job apply -f` reads it. Proto JSON's spellings of a
// JobSpec (OVERLAP_SKIP, "60s") are read too, for clients generated from
// the proto.
type Marshaler struct {
	protoJSON runtime.JSONPb
}

var _ runtime.Marshaler = (*Marshaler)(nil)

// NewMarshaler returns the marshaler the gateway answers with.
func NewMarshaler() *Marshaler {
	return &Marshaler{protoJSON: runtime.JSONPb{
		MarshalOptions: protojson.MarshalOptions{UseProtoNames: true},
	}}
}

// ContentType is application/json.
func (m *Marshaler) ContentType(v any) string { return m.protoJSON.ContentType(v) }

// Marshal writes v; a message that holds no JobSpec is plain proto JSON.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	if r, ok := v.(*pb.PollAttemptsResponse); ok {
		if b, ok := marshalOffers(r); ok {
			return b, nil
		}
	}
	msg, ok := v.(proto.Message)
	if !ok || !holdsSpec(msg.ProtoReflect().Descriptor()) {
		return m.protoJSON.Marshal(v)
	}
	var buf bytes.Buffer
	if err := m.writeMessage(&buf, msg.ProtoReflect()); err != nil {
		return nil, err
	}
	// Proto JSON spaces its output at random, to discourage comparing it
	// byte for byte; one compaction makes the whole answer read alike.
	var out bytes.Buffer
	if err := json.Compact(&out, buf.Bytes()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeMessage writes msg's set fields in declaration order, as proto JSON
// does, each field that holds no JobSpec as proto JSON writes it.
func (m *Marshaler) writeMessage(buf *bytes.Buffer, msg protoreflect.Message) error {
	if msg.Descriptor().FullName() == jobSpecName {
		return writeSpec(buf, msg)
	}
	fields := msg.Descriptor().Fields()
	buf.WriteByte('{')
	first := true
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !msg.Has(fd) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := m.writeField(buf, msg, fd); err != nil {
			return fmt.Errorf("%s: %w", fd.Name(), err)
		}
	}
	buf.WriteByte('}')
	return nil
}

func (m *Marshaler) writeField(buf *bytes.Buffer, msg protoreflect.Message, fd protoreflect.FieldDescriptor) error {
	if !fieldHoldsSpec(fd) {
		// The field alone, in a message of its own: proto JSON writes
		// {"name":value}, of which the pair is what this object needs.
		one := msg.Type().New()
		one.Set(fd, msg.Get(fd))
		b, err := m.protoJSON.MarshalOptions.Marshal(one.Interface())
		if err != nil {
			return err
		}
		b = bytes.TrimSpace(b)
		buf.Write(bytes.TrimSpace(b[1 : len(b)-1]))
		return nil
	}
	name, _ := json.Marshal(string(fd.Name()))
	buf.Write(name)
	buf.WriteByte(':')
	v := msg.Get(fd)
	switch {
	case fd.IsList():
		buf.WriteByte('[')
		for i := range v.List().Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := m.writeMessage(buf, v.List().Get(i).Message()); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case fd.IsMap():
		return m.writeMap(buf, v.Map())
	default:
		return m.writeMessage(buf, v.Message())
	}
	return nil
}

// writeMap writes a map of messages with its keys sorted, as proto JSON
// does.
func (m *Marshaler) writeMap(buf *bytes.Buffer, mp protoreflect.Map) error {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return cmp.Compare(a.String(), b.String()) })
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(k.String())
		buf.Write(name)
		buf.WriteByte(':')
		if err := m.writeMessage(buf, mp.Get(k).Message()); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// writeSpec writes a JobSpec in the job file's form. A spec this build
// cannot write there (an enum value only a newer release names, met during
// a rolling upgrade) is written as proto JSON, which clients also read,
// rather than failing the whole answer.
func writeSpec(buf *bytes.Buffer, msg protoreflect.Message) error {
	spec, ok := msg.Interface().(*pb.JobSpec)
	if !ok {
		return fmt.Errorf("gateway: a %T is no JobSpec", msg.Interface())
	}
	b, err := jobfile.EncodeJSON(spec)
	if err != nil {
		b, err = protojson.MarshalOptions{UseProtoNames: true}.Marshal(spec)
	}
	if err != nil {
		return err
	}
	buf.Write(bytes.TrimSpace(b))
	return nil
}

// Unmarshal reads data into v, a message or a pointer to one.
func (m *Marshaler) Unmarshal(data []byte, v any) error {
	msg, ok := targetMessage(v)
	if !ok || !holdsSpec(msg.ProtoReflect().Descriptor()) {
		return m.protoJSON.Unmarshal(data, v)
	}
	return m.readMessage(data, msg.ProtoReflect())
}

// NewDecoder reads one JSON value from r per Decode; an empty body is
// io.EOF, which the gateway takes as "no body".
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	d := json.NewDecoder(r)
	return runtime.DecoderFunc(func(v any) error {
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return err
		}
		return m.Unmarshal(raw, v)
	})
}

// NewEncoder writes each value as Marshal does, one per line.
func (m *Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, m.protoJSON.Delimiter()...))
		return err
	})
}

// targetMessage is the message v points at, allocating it when v is a
// pointer to a nil message pointer (the gateway decodes a body into
// &req.Spec).
func targetMessage(v any) (proto.Message, bool) {
	if msg, ok := v.(proto.Message); ok {
		return msg, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
		return nil, false
	}
	if !rv.Elem().Type().Implements(reflect.TypeFor[proto.Message]()) {
		return nil, false
	}
	if rv.Elem().IsNil() {
		rv.Elem().Set(reflect.New(rv.Elem().Type().Elem()))
	}
	return rv.Elem().Interface().(proto.Message), true
}

// readMessage reads data into msg: a JobSpec by the job file's rules, any
// other message by proto JSON's, but for the fields that hold a JobSpec.
func (m *Marshaler) readMessage(data []byte, msg protoreflect.Message) error {
	if msg.Descriptor().FullName() == jobSpecName {
		return readSpec(data, msg)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("%s: want a JSON object: %w", msg.Descriptor().Name(), err)
	}
	specs := map[protoreflect.FieldDescriptor]json.RawMessage{}
	fields := msg.Descriptor().Fields()
	for key, raw := range obj {
		fd := fields.ByName(protoreflect.Name(key))
		if fd == nil {
			fd = fields.ByJSONName(key)
		}
		if fd != nil && fieldHoldsSpec(fd) {
			specs[fd] = raw
			delete(obj, key)
		}
	}
	rest, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := m.protoJSON.UnmarshalOptions.Unmarshal(rest, msg.Interface()); err != nil {
		return err
	}
	for fd, raw := range specs {
		if err := m.readField(raw, msg, fd); err != nil {
			return fmt.Errorf("%s: %w", fd.Name(), err)
		}
	}
	return nil
}

func (m *Marshaler) readField(raw json.RawMessage, msg protoreflect.Message, fd protoreflect.FieldDescriptor) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("want a list: %w", err)
		}
		list := msg.Mutable(fd).List()
		for _, item := range items {
			e := list.NewElement()
			if err := m.readMessage(item, e.Message()); err != nil {
				return err
			}
			list.Append(e)
		}
	case fd.IsMap():
		var items map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("want an object: %w", err)
		}
		mp := msg.Mutable(fd).Map()
		for k, item := range items {
			e := mp.NewValue()
			if err := m.readMessage(item, e.Message()); err != nil {
				return err
			}
			mp.Set(protoreflect.ValueOfString(k).MapKey(), e)
		}
	default:
		return m.readMessage(raw, msg.Mutable(fd).Message())
	}
	return nil
}

// readSpec reads a JobSpec in the job file's JSON form.
func readSpec(data []byte, msg protoreflect.Message) error {
	spec, err := jobfile.FromJSON(data)
	if err != nil {
		return err
	}
	target, ok := msg.Interface().(*pb.JobSpec)
	if !ok {
		return errors.New("gateway: not a JobSpec")
	}
	proto.Reset(target)
	proto.Merge(target, spec)
	return nil
}

// specHolders caches holdsSpec by message name.
var specHolders sync.Map

// holdsSpec reports whether a message of md is, or holds somewhere inside,
// a JobSpec.
func holdsSpec(md protoreflect.MessageDescriptor) bool {
	if v, ok := specHolders.Load(md.FullName()); ok {
		return v.(bool)
	}
	held := searchSpec(md, map[protoreflect.FullName]bool{})
	specHolders.Store(md.FullName(), held)
	return held
}

func searchSpec(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.FullName() == jobSpecName {
		return true
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		if sub := messageOf(fields.Get(i)); sub != nil && searchSpec(sub, seen) {
			return true
		}
	}
	return false
}

// fieldHoldsSpec reports whether fd's messages (itself, its list's
// elements or its map's values) hold a JobSpec.
func fieldHoldsSpec(fd protoreflect.FieldDescriptor) bool {
	md := messageOf(fd)
	return md != nil && holdsSpec(md)
}

func messageOf(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		return nil
	}
	return fd.Message()
}
