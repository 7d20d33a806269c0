package jobfile_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCalendarFileRoundTrips(t *testing.T) {
	file := `
name: us-holidays
timezone: America/New_York
labels: {team: billing}
entries:
  - date: 2026-12-25
    note: Christmas Day
  - {from: 2026-12-24T18:00, to: 2026-12-27}
  - days: [sat, sun]
    between: "18:00-06:00"
`
	specs, err := jobfile.DecodeCalendars([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.CalendarSpec{Name: "us-holidays", Timezone: "America/New_York", Labels: map[string]string{"team": "billing"},
		Entries: []*pb.CalendarEntry{
			{Date: "2026-12-25", Note: "Christmas Day"},
			{From: "2026-12-24T18:00", To: "2026-12-27"},
			{Days: []string{"sat", "sun"}, Between: "18:00-06:00"},
		}}
	if len(specs) != 1 || !proto.Equal(specs[0], want) {
		t.Fatalf("decoded %v, want %v", specs, want)
	}
	for _, encode := range []func(...*pb.CalendarSpec) ([]byte, error){jobfile.EncodeCalendarsYAML, jobfile.EncodeCalendarsJSON} {
		out, err := encode(want, want)
		if err != nil {
			t.Fatal(err)
		}
		back, err := jobfile.DecodeCalendars(out)
		if err != nil || len(back) != 2 || !proto.Equal(back[1], want) {
			t.Fatalf("round trip of\n%s\ngave %v, %v", out, back, err)
		}
	}
}

func TestCalendarFileErrorsNameTheField(t *testing.T) {
	for file, want := range map[string]string{
		"name: x\nentries: [{dates: 2026-12-25}]": `entries[0]: unknown field "dates"`,
		"- name: x\n- 3": "calendars[1]: want a calendar object",
		"just text":      "want a calendar object or a list of calendars",
	} {
		_, err := jobfile.DecodeCalendars([]byte(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", file, err, want)
		}
	}
}
