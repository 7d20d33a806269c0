package jobfile

import (
	"bytes"
	"sync"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The calendar file (`raftcron calendar apply -f`, `calendar get -o
// yaml`) is CalendarSpec by the job file's rules: derived from its
// descriptor the same way, one calendar object or a list.

var calendarSchemaErr = sync.OnceValue(func() error {
	return checkMessage((&pb.CalendarSpec{}).ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{})
})

// DecodeCalendars reads a calendar file, with Decode's rules and errors
// (objects of a list named calendars[i]).
func DecodeCalendars(data []byte) ([]*pb.CalendarSpec, error) {
	return DecodeAs(data, "calendar", func() *pb.CalendarSpec { return &pb.CalendarSpec{} })
}

// EncodeCalendarsYAML writes specs in the calendar file format: one object
// for one spec, a list for more. DecodeCalendars reads it back.
func EncodeCalendarsYAML(specs ...*pb.CalendarSpec) ([]byte, error) {
	v, err := calendarValue(specs)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(v)
}

// EncodeCalendarsJSON is EncodeCalendarsYAML's JSON twin.
func EncodeCalendarsJSON(specs ...*pb.CalendarSpec) ([]byte, error) {
	v, err := calendarValue(specs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, v, "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func calendarValue(specs []*pb.CalendarSpec) (any, error) {
	if err := calendarSchemaErr(); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, ErrNoSpecs
	}
	objects := make([]object, len(specs))
	for i, s := range specs {
		o, err := encodeMessage(s.ProtoReflect(), "")
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
