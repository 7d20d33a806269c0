package jobspec

import (
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestScheduleOf: a stored spec's schedules are their union, each instant
// once; its schedule alone otherwise.
func TestScheduleOf(t *testing.T) {
	spec := &pb.JobSpec{Schedules: []string{" 0 9 * * mon-fri", "0 9,12 * * sat,mon "}, Timezone: "Europe/Berlin"}
	Normalize(spec)
	if spec.Schedules[0] != "0 9 * * mon-fri" || spec.Schedules[1] != "0 9,12 * * sat,mon" {
		t.Fatalf("normalized schedules %q, want them trimmed", spec.Schedules)
	}
	s, err := ScheduleOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	at := func(d, h int) time.Time { return time.Date(2026, 5, d, h, 0, 0, 0, berlin) }
	// Fri 1 May 09:00, Sat 2 09:00 and 12:00, Mon 4 09:00 (both members: once), Mon 12:00, Tue 09:00.
	want := []time.Time{at(1, 9), at(2, 9), at(2, 12), at(4, 9), at(4, 12), at(5, 9)}
	t0 := at(1, 0)
	for _, w := range want {
		t0 = s.Next(t0)
		if !t0.Equal(w) {
			t.Fatalf("next %v, want %v", t0, w)
		}
	}
	one, err := ScheduleOf(&pb.JobSpec{Schedule: "@at 2026-12-24T18:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Next(at(1, 0)); !got.Equal(time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC)) || !one.Next(got).IsZero() {
		t.Fatalf("@at: %v then %v, want once", got, one.Next(got))
	}
}
