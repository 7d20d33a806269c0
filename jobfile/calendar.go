package jobfile

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The calendar file (`raftcron calendar apply -f`, `calendar get -o
// yaml`) is CalendarSpec by the job file's rules: derived from its
// descriptor the same way, one calendar object or a list.

// DecodeCalendars reads a calendar file, with Decode's rules and errors
// (objects of a list named calendars[i]).
func DecodeCalendars(data []byte) ([]*pb.CalendarSpec, error) {
	return DecodeAs(data, "calendar", func() *pb.CalendarSpec { return &pb.CalendarSpec{} })
}

// EncodeCalendarsYAML writes specs in the calendar file format: one object
// for one spec, a list for more. DecodeCalendars reads it back.
func EncodeCalendarsYAML(specs ...*pb.CalendarSpec) ([]byte, error) { return EncodeYAMLAs(specs...) }

// EncodeCalendarsJSON is EncodeCalendarsYAML's JSON twin.
func EncodeCalendarsJSON(specs ...*pb.CalendarSpec) ([]byte, error) { return EncodeJSONAs(specs...) }
