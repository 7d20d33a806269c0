package jobfile

import (
	"fmt"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The file form is derived from JobSpec's descriptor by the rules of
// DESIGN.md: proto names in declaration order, enums by their lowercase
// names without prefix, durations and timestamps as text, messages as
// objects, repeated fields as lists, string-keyed maps as objects. A field
// outside the rules makes every call fail with ErrUnsupported, so that it
// is found by the first test that touches the package, not dropped from
// files.

const (
	durationName  protoreflect.FullName = "google.protobuf.Duration"
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
)

// jobSpec is the descriptor the format is derived from.
var jobSpec = (&pb.JobSpec{}).ProtoReflect().Descriptor()

// schemaErr is JobSpec's first field outside the rules, checked once.
var schemaErr = sync.OnceValue(func() error { return checkMessage(jobSpec, map[protoreflect.FullName]bool{}) })

// checkMessage checks every field of md, and of the messages it holds.
func checkMessage(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) error {
	if seen[md.FullName()] {
		return nil
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		if err := checkField(fields.Get(i), seen); err != nil {
			return err
		}
	}
	return nil
}

func checkField(fd protoreflect.FieldDescriptor, seen map[protoreflect.FullName]bool) error {
	unsupported := func(what string) error {
		return fmt.Errorf("%w: %s is %s", ErrUnsupported, fd.FullName(), what)
	}
	if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return unsupported("in oneof " + string(o.Name()))
	}
	if fd.IsMap() {
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return unsupported("a map with " + fd.MapKey().Kind().String() + " keys")
		}
		fd = fd.MapValue()
	}
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BoolKind:
		return nil
	case protoreflect.EnumKind:
		return checkEnum(fd.Enum())
	case protoreflect.MessageKind:
		md := fd.Message()
		if md.FullName() == durationName || md.FullName() == timestampName {
			return nil
		}
		if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
			return unsupported("a " + string(md.FullName()))
		}
		return checkMessage(md, seen)
	}
	if _, _, ok := integerKind(fd.Kind()); ok {
		return nil
	}
	return unsupported("of kind " + fd.Kind().String())
}

// integerKind tells the width and signedness of an integer kind.
func integerKind(k protoreflect.Kind) (bits int, signed, ok bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return 32, true, true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return 64, true, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return 32, false, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return 64, false, true
	}
	return 0, false, false
}

// checkEnum requires every value to carry the prefix the file name drops.
func checkEnum(ed protoreflect.EnumDescriptor) error {
	prefix := enumPrefix(ed)
	values := ed.Values()
	for i := range values.Len() {
		if name := string(values.Get(i).Name()); !strings.HasPrefix(name, prefix) || name == prefix {
			return fmt.Errorf("%w: enum value %s does not start with %s", ErrUnsupported, values.Get(i).FullName(), prefix)
		}
	}
	return nil
}

// enumPrefix is the enum's name in upper snake case, with an underscore:
// CatchupPolicy's values start with CATCHUP_POLICY_ (buf lint's
// ENUM_VALUE_PREFIX rule).
func enumPrefix(ed protoreflect.EnumDescriptor) string {
	name := []rune(string(ed.Name()))
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) &&
			(!unicode.IsUpper(name[i-1]) || i+1 < len(name) && unicode.IsLower(name[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String() + "_"
}

// enumFileName is an enum value's name in the file: buffer_one for
// OVERLAP_BUFFER_ONE.
func enumFileName(ev protoreflect.EnumValueDescriptor) string {
	return strings.ToLower(strings.TrimPrefix(string(ev.Name()), enumPrefix(ev.Parent().(protoreflect.EnumDescriptor))))
}

// enumWant lists an enum's file names but the zero value's, as "a, b or c".
func enumWant(ed protoreflect.EnumDescriptor) string {
	var names []string
	values := ed.Values()
	for i := range values.Len() {
		if v := values.Get(i); v.Number() != 0 {
			names = append(names, enumFileName(v))
		}
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// wantKind says what a value of fd's kind is written as, in the file's
// words; fd is a singular field, a list's element or a map's value.
func wantKind(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.EnumKind:
		return "a string"
	case protoreflect.BoolKind:
		return "true or false"
	case protoreflect.MessageKind:
		if isTextMessage(fd.Message()) {
			return "a string"
		}
		return "an object"
	}
	if _, signed, _ := integerKind(fd.Kind()); signed {
		return "an integer"
	}
	return "a non-negative integer"
}

// wantField is wantKind for a whole field, lists and maps included.
func wantField(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsList():
		return "a list"
	case fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
		return "a map of strings"
	case fd.IsMap():
		return "a map"
	}
	return wantKind(fd)
}

// isTextMessage tells the messages written as one string.
func isTextMessage(md protoreflect.MessageDescriptor) bool {
	return md.FullName() == durationName || md.FullName() == timestampName
}
