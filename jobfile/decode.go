package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Decode reads a job file: YAML or JSON (JSON is read as YAML), holding one
// job object, a list of job objects, or a stream of "---"-separated documents
// each holding either. Jobs come back in file order. Any problem is an error
// naming the field and the rule, and no spec is returned; an unknown field is
// an error, as is a file with no job, and so is a duplicated key (which
// also means a "<<" merge key cannot override a merged field; plain anchors
// and aliases work). Decode does not validate the jobs (that
// is jobspec's work): it only checks the format.
func Decode(data []byte) ([]*pb.JobSpec, error) {
	if err := schemaErr(); err != nil {
		return nil, err
	}
	items, listed, err := readItems(data, "job")
	if err != nil {
		return nil, err
	}
	specs := make([]*pb.JobSpec, 0, len(items))
	for i, item := range items {
		path := ""
		if listed {
			path = fmt.Sprintf("jobs[%d]", i)
		}
		spec, err := decodeJob(item, path)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// FromMap reads one job in the generic JSON form ToMap writes, or that
// encoding/json decodes from a job file's JSON (numbers as float64 or
// json.Number), with Decode's rules and errors.
func FromMap(m map[string]any) (*pb.JobSpec, error) {
	if err := schemaErr(); err != nil {
		return nil, err
	}
	return decodeJob(m, "")
}

// FromJSON reads one job object in the file's JSON form (EncodeJSON's
// output for one spec), as a JSON API body would carry it.
func FromJSON(data []byte) (*pb.JobSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJSON, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the job object", ErrInvalidJSON)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &FieldError{Rule: "want a job object, got " + describe(v)}
	}
	return FromMap(m)
}

// readItems parses the YAML stream and returns the raw values of its
// objects (noun: "job") in order. listed tells whether the file was
// written as a list (or as several documents), in which case errors name
// the objects by index.
func readItems(data []byte, noun string) (items []any, listed bool, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// Strict: a duplicated key is an error instead of last-one-wins.
	dec.SetStrict(true)
	docs := 0
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s", ErrInvalidYAML, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if doc == nil { // an empty document, e.g. after a trailing "---"
			continue
		}
		docs++
		switch v := doc.(type) {
		case map[any]any:
			items = append(items, v)
		case []any:
			listed = true
			items = append(items, v...)
		default:
			return nil, false, &FieldError{Rule: "want a " + noun + " object or a list of " + noun + "s, got " + describe(v)}
		}
	}
	if len(items) == 0 {
		if noun != "job" {
			return nil, false, fmt.Errorf("empty file: want a %s object or a list of %ss", noun, noun)
		}
		return nil, false, ErrEmpty
	}
	return items, listed || docs > 1, nil
}

// decodeJob turns one raw job value into a spec. path prefixes error
// fields. Unknown fields are looked for first, everywhere: a misspelled
// name explains the file better than the type error it may also cause.
func decodeJob(item any, path string) (*pb.JobSpec, error) {
	if _, ok := members(item); !ok {
		return nil, &FieldError{Field: path, Rule: "want a job object, got " + describe(item)}
	}
	spec := &pb.JobSpec{}
	if err := decodeObject(spec.ProtoReflect(), item, path); err != nil {
		return nil, err
	}
	return spec, nil
}

// decodeObject sets m from raw object v: first every key is checked,
// then the values are read.
func decodeObject(m protoreflect.Message, v any, path string) error {
	if err := checkKeys(m.Descriptor(), v, path); err != nil {
		return err
	}
	return decodeMessage(m, v, path)
}

// member is one key and value of a raw object.
type member struct {
	key   any    // as the parser gave it: YAML keys need not be strings
	name  string // the key as text
	value any
}

// members lists an object's members sorted by name, so that the first
// error of a file is the same on every run; ok is false if v is no object.
func members(v any) (ms []member, ok bool) {
	switch m := v.(type) {
	case map[string]any:
		for k, e := range m {
			ms = append(ms, member{k, k, e})
		}
	case map[any]any:
		for k, e := range m {
			ms = append(ms, member{k, fmt.Sprint(k), e})
		}
	default:
		return nil, false
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms, true
}

// checkKeys rejects any key of v that is not a field of md, spelled exactly,
// and walks into the messages v holds. Values of the wrong type are left
// to decodeMessage.
func checkKeys(md protoreflect.MessageDescriptor, v any, path string) error {
	ms, _ := members(v)
	seen := make(map[protoreflect.Name]bool, len(ms))
	for _, m := range ms {
		fd := fieldOf(md, m)
		if fd == nil {
			return &FieldError{Field: path, Rule: unknownFieldRule(m.name, md)}
		}
		if seen[fd.Name()] {
			return &FieldError{Field: join(path, string(fd.Name())), Rule: "given twice"}
		}
		seen[fd.Name()] = true
		if err := checkNested(fd, m.value, join(path, string(fd.Name()))); err != nil {
			return err
		}
	}
	return nil
}

// fieldOf is md's field named by m's key, or nil.
func fieldOf(md protoreflect.MessageDescriptor, m member) protoreflect.FieldDescriptor {
	if m.key == true {
		// YAML 1.1, which yaml.v2 reads, takes a bare on for true: as a
		// key it can only mean a field named on (a dependency's).
		return md.Fields().ByName(onField)
	}
	if _, isString := m.key.(string); !isString {
		return nil // never a field name, whatever it prints as
	}
	return md.Fields().ByName(protoreflect.Name(m.name))
}

// onField is the one field name YAML 1.1 reads as a boolean.
const onField = "on"

// checkNested runs checkKeys over the messages in field fd's value v.
func checkNested(fd protoreflect.FieldDescriptor, v any, path string) error {
	switch {
	case fd.IsMap():
		if !isObject(fd.MapValue()) {
			return nil
		}
		ms, _ := members(v)
		for _, m := range ms {
			if err := checkKeys(fd.MapValue().Message(), m.value, elementPath(fd.MapValue(), path, m.name)); err != nil {
				return err
			}
		}
	case !isObject(fd):
	case fd.IsList():
		items, _ := v.([]any)
		for i, item := range items {
			if err := checkKeys(fd.Message(), item, elementPath(fd, path, fmt.Sprint(i))); err != nil {
				return err
			}
		}
	default:
		return checkKeys(fd.Message(), v, path)
	}
	return nil
}

// isObject tells the values of fd's kind that are objects in the file.
func isObject(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.MessageKind && !isTextMessage(fd.Message())
}

// decodeMessage sets m's fields from raw object v, whose keys checkKeys
// accepted. A null value is an absent field.
func decodeMessage(m protoreflect.Message, v any, path string) error {
	ms, _ := members(v)
	for _, mb := range ms {
		if mb.value == nil {
			continue
		}
		fd := fieldOf(m.Descriptor(), mb)
		if err := decodeField(m, fd, mb.value, join(path, string(fd.Name()))); err != nil {
			return err
		}
	}
	return nil
}

func decodeField(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, path string) error {
	switch {
	case fd.IsList():
		return decodeList(m, fd, raw, path)
	case fd.IsMap():
		return decodeMap(m, fd, raw, path)
	}
	v, err := decodeValue(fd, raw, path, func() protoreflect.Value { return m.NewField(fd) })
	if err == nil && v.IsValid() {
		m.Set(fd, v)
	}
	return err
}

func decodeList(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, path string) error {
	items, ok := raw.([]any)
	if !ok {
		return typeError(path, wantField(fd), raw)
	}
	list := m.Mutable(fd).List()
	for i, item := range items {
		v, err := decodeValue(fd, item, elementPath(fd, path, fmt.Sprint(i)), list.NewElement)
		if err != nil {
			return err
		}
		if !v.IsValid() {
			v = list.NewElement()
		}
		list.Append(v)
	}
	return nil
}

func decodeMap(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, path string) error {
	ms, ok := members(raw)
	if !ok {
		return typeError(path, wantField(fd), raw)
	}
	mp := m.Mutable(fd).Map()
	for _, mb := range ms {
		// A YAML key like 2 or true is its text, as for string values.
		text, ok := scalarText(mb.key)
		if !ok {
			return &FieldError{Field: path, Rule: "want string keys, got " + describe(mb.key)}
		}
		key := protoreflect.ValueOfString(text).MapKey()
		if mp.Has(key) {
			return &FieldError{Field: path, Rule: fmt.Sprintf("key %q given twice", text)}
		}
		v, err := decodeValue(fd.MapValue(), mb.value, elementPath(fd.MapValue(), path, text), mp.NewValue)
		if err != nil {
			return err
		}
		if !v.IsValid() {
			v = mp.NewValue()
		}
		mp.Set(key, v)
	}
	return nil
}

// decodeValue converts raw to a value of fd's kind: fd is a singular
// field, a list's element or a map's value, and newValue makes an empty
// message of its type. null is the zero value; the invalid Value stands
// for an absent one ("" for a duration or timestamp).
func decodeValue(fd protoreflect.FieldDescriptor, raw any, path string, newValue func() protoreflect.Value) (protoreflect.Value, error) {
	if raw == nil {
		if fd.Kind() == protoreflect.MessageKind {
			return newValue(), nil
		}
		return fd.Default(), nil
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		b, ok := raw.(bool)
		if !ok {
			return protoreflect.Value{}, typeError(path, wantKind(fd), raw)
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.MessageKind:
		if isObject(fd) {
			if _, ok := members(raw); !ok {
				return protoreflect.Value{}, typeError(path, wantKind(fd), raw)
			}
			v := newValue()
			return v, decodeMessage(v.Message(), raw, path)
		}
	}
	if _, _, ok := integerKind(fd.Kind()); ok {
		return decodeInteger(fd, raw, path)
	}
	text, ok := scalarText(raw)
	if !ok {
		return protoreflect.Value{}, typeError(path, wantKind(fd), raw)
	}
	return decodeText(fd, text, path, newValue)
}

// decodeText converts the text of a string, enum, duration or timestamp.
func decodeText(fd protoreflect.FieldDescriptor, text, path string, newValue func() protoreflect.Value) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(text), nil
	case protoreflect.EnumKind:
		n, err := decodeEnum(fd.Enum(), text, path)
		return protoreflect.ValueOfEnum(n), err
	}
	if text == "" {
		return protoreflect.Value{}, nil
	}
	var seconds int64
	var nanos int32
	if fd.Message().FullName() == durationName {
		d, err := time.ParseDuration(text)
		if err != nil {
			return protoreflect.Value{}, &FieldError{Field: path, Rule: fmt.Sprintf("invalid duration %q (use Go syntax like 90s, 5m, 1h30m)", text)}
		}
		seconds, nanos = int64(d/time.Second), int32(d%time.Second)
	} else {
		t, err := time.Parse(time.RFC3339Nano, text)
		seconds, nanos = t.Unix(), int32(t.Nanosecond())
		if err != nil || (&timestamppb.Timestamp{Seconds: seconds, Nanos: nanos}).CheckValid() != nil {
			return protoreflect.Value{}, &FieldError{Field: path, Rule: fmt.Sprintf("invalid timestamp %q (use RFC 3339 like 2026-12-01T00:00:00Z)", text)}
		}
	}
	v := newValue()
	fields := v.Message().Descriptor().Fields()
	v.Message().Set(fields.ByName("seconds"), protoreflect.ValueOfInt64(seconds))
	v.Message().Set(fields.ByName("nanos"), protoreflect.ValueOfInt32(nanos))
	return v, nil
}

// decodeEnum reads an enum value by its file name or, for clients
// generated from the proto, by its full name (OVERLAP_SKIP); "" is the
// zero value.
func decodeEnum(ed protoreflect.EnumDescriptor, text, path string) (protoreflect.EnumNumber, error) {
	if text == "" {
		return 0, nil
	}
	values := ed.Values()
	for i := range values.Len() {
		v := values.Get(i)
		if string(v.Name()) == text || v.Number() != 0 && enumFileName(v) == text {
			return v.Number(), nil
		}
	}
	return 0, &FieldError{Field: path, Rule: fmt.Sprintf("unknown value %q (want %s)", text, enumWant(ed))}
}

func typeError(path, want string, raw any) error {
	return &FieldError{Field: path, Rule: fmt.Sprintf("want %s, got %s", want, jsonType(raw))}
}
