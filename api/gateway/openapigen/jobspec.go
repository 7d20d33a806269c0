package main

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const specDescription = "A job's spec in the job file's JSON form, as `raftcron job get -o json` prints it and " +
	"`raftcron job apply -f` reads it: the proto's field names, enums by their lowercase names (skip), durations " +
	"as Go durations (90s, 1h30m), times in RFC 3339. Proto JSON's spellings (OVERLAP_SKIP, \"60s\") are read too, " +
	"for clients generated from the proto."

const durationDescription = "A Go duration: 90s, 1m30s, 1h."

// jobFileSchemas rewrites the schema of JobSpec, and of the messages and
// enums it holds, in the job file's form the gateway speaks for specs
// (package jobfile): enums by their file names, durations as Go durations,
// integers as numbers. It walks JobSpec's descriptor beside the generated
// schemas, so a new field of any kind the file covers is rewritten with
// no change here.
func jobFileSchemas(doc obj) error {
	schemas := dig(doc, "components", "schemas")
	w := fileSchemas{schemas: schemas, done: map[string]bool{}}
	if err := w.message("JobSpec", (&pb.JobSpec{}).ProtoReflect().Descriptor()); err != nil {
		return err
	}
	schemas["JobSpec"].(obj)["description"] = specDescription
	return w.unshared(doc)
}

type fileSchemas struct {
	schemas obj
	// done holds the schemas rewritten, by name.
	done map[string]bool
}

// claim returns the schema name to rewrite, or nil if it was rewritten
// already.
func (w *fileSchemas) claim(name string) (obj, error) {
	if w.done[name] {
		return nil, nil
	}
	w.done[name] = true
	s, ok := w.schemas[name].(obj)
	if !ok {
		return nil, fmt.Errorf("no schema %s", name)
	}
	return s, nil
}

// message rewrites the schema name, of a message md, and what it holds.
func (w *fileSchemas) message(name string, md protoreflect.MessageDescriptor) error {
	s, err := w.claim(name)
	if s == nil {
		return err
	}
	props := dig(s, "properties")
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		p, ok := props[string(fd.Name())].(obj)
		if !ok {
			return fmt.Errorf("schema %s has no property %s", name, fd.Name())
		}
		switch {
		case fd.IsList():
			err = w.value(dig(p, "items"), fd)
		case fd.IsMap():
			err = w.value(dig(p, "additionalProperties"), fd.MapValue())
		default:
			err = w.value(p, fd)
		}
		if err != nil {
			return fmt.Errorf("%s.%s: %w", name, fd.Name(), err)
		}
	}
	return nil
}

// value rewrites s, the schema of one value of fd.
func (w *fileSchemas) value(s obj, fd protoreflect.FieldDescriptor) error {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return w.enum(refName(s), fd)
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Duration":
			s["type"], s["example"] = "string", "1m30s"
			delete(s, "format")
			desc, _ := s["description"].(string)
			s["description"] = strings.TrimSpace(desc + " " + durationDescription)
			return nil
		case "google.protobuf.Timestamp":
			s["type"], s["format"] = "string", "date-time"
			return nil
		}
		return w.message(refName(s), fd.Message())
	case protoreflect.StringKind, protoreflect.BoolKind:
		return nil
	}
	// Numbers, where proto JSON writes 64-bit integers as strings.
	s["type"] = "integer"
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		s["format"] = "int32"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s["format"], s["minimum"] = "int64", 0
	default:
		s["format"] = "int64"
	}
	return nil
}

// enum lists the file names of an enum's values but the zero value's,
// which is an absent field.
func (w *fileSchemas) enum(name string, fd protoreflect.FieldDescriptor) error {
	s, err := w.claim(name)
	if s == nil {
		return err
	}
	var names []any
	values := fd.Enum().Values()
	for i := range values.Len() {
		ev := values.Get(i)
		if ev.Number() == 0 {
			continue
		}
		v, err := jobfile.Value(fd, protoreflect.ValueOfEnum(ev.Number()))
		if err != nil {
			return err
		}
		names = append(names, v)
	}
	s["type"], s["enum"] = "string", names
	s["description"] = fmt.Sprintf("In the job file's form; the proto's names (%s) are read too.", values.Get(values.Len()-1).Name())
	delete(s, "default")
	return nil
}

func refName(s obj) string {
	ref, _ := s["$ref"].(string)
	return strings.TrimPrefix(ref, schemaRefs)
}

// unshared checks that no schema rewritten for JobSpec, JobSpec's own
// aside, is used outside it: there the gateway speaks proto JSON, which
// the rewritten schema would misdescribe.
func (w *fileSchemas) unshared(doc obj) error {
	var shared []string
	check := func(o obj) {
		if name := refName(o); name != "JobSpec" && w.done[name] && !slices.Contains(shared, name) {
			shared = append(shared, name)
		}
	}
	walk(doc["paths"], check)
	for name, s := range w.schemas {
		if !w.done[name] {
			walk(s, check)
		}
	}
	if len(shared) > 0 {
		slices.Sort(shared)
		return fmt.Errorf("schemas %s are in JobSpec, in the job file's form, and also elsewhere, in proto JSON: "+
			"give the other use a schema of its own", strings.Join(shared, ", "))
	}
	return nil
}
