package checkin

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// slot0 is a slot of every schedule below: a whole minute, 02:00 UTC.
var slot0 = time.Date(2026, 5, 4, 2, 0, 0, 0, time.UTC).Unix()

func at(slot int64, d time.Duration) time.Time { return time.Unix(slot, 0).Add(d) }

func job(t *testing.T, spec string, cursor int64, grace time.Duration) Job {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return Job{Sched: s, Cursor: cursor, Grace: grace}
}

func TestFind(t *testing.T) {
	t.Parallel()
	const minute = int64(60)
	tests := []struct {
		name string
		job  Job
		now  time.Time
		want Match
	}{
		{"on time", job(t, "* * * * *", slot0-minute, 10*time.Second), at(slot0, 500*time.Millisecond),
			Match{Slot: slot0}},
		{"late, exactly at the grace", job(t, "* * * * *", slot0-minute, 10*time.Second), at(slot0, 10*time.Second),
			Match{Slot: slot0}},
		{"late, a nanosecond past the grace", job(t, "* * * * *", slot0-minute, 10*time.Second),
			at(slot0, 10*time.Second+time.Nanosecond), Match{}},
		{"one second late", job(t, "* * * * *", slot0-minute, 10*time.Second), at(slot0, 11*time.Second), Match{}},
		{"a few seconds early", job(t, "0 2 * * *", slot0-24*3600, time.Minute), at(slot0, -3*time.Second),
			Match{Slot: slot0}},
		{"early by exactly the grace", job(t, "* * * * *", slot0-minute, 10*time.Second), at(slot0, -10*time.Second),
			Match{Slot: slot0}},
		{"earlier than the grace", job(t, "* * * * *", slot0-minute, 10*time.Second),
			at(slot0, -10*time.Second-time.Nanosecond), Match{}},
		// Every 2 s, the slot before checked in: a ping 1.5 s before the
		// next slot is 0.5 s after the last one, a second ping for it.
		{"early by more than half the period", job(t, "@every 2s", slot0-2, 5*time.Second),
			at(slot0, -1500*time.Millisecond), Match{}},
		{"early by half the period", job(t, "@every 2s", slot0-2, 5*time.Second), at(slot0, -time.Second),
			Match{Slot: slot0}},
		// A grace longer than the period: the newest due slot takes the
		// ping, the ones before it can have none any more.
		{"the newest due slot", job(t, "@every 10s", slot0-30, 30*time.Second), at(slot0, time.Second),
			Match{Slot: slot0, Missed: Range{From: slot0 - 20, To: slot0 - 10, Count: 2}}},
		// The last due slot is past its grace; the next one is near.
		{"early after a missed slot", job(t, "* * * * *", slot0-2*minute, 5*time.Second), at(slot0, -3*time.Second),
			Match{Slot: slot0, Missed: Range{From: slot0 - minute, To: slot0 - minute, Count: 1}}},
		{"a second ping for a checked-in slot", job(t, "* * * * *", slot0, 10*time.Second), at(slot0, 2*time.Second),
			Match{}},
		{"paused", func() Job { j := job(t, "* * * * *", slot0-minute, 10*time.Second); j.Paused = true; return j }(),
			at(slot0, time.Second), Match{}},
		{"before start_at", func() Job {
			j := job(t, "* * * * *", slot0-minute, 10*time.Second)
			j.After = at(slot0+minute, -time.Nanosecond)
			return j
		}(), at(slot0, time.Second), Match{}},
		{"at start_at", func() Job {
			j := job(t, "* * * * *", slot0-minute, 10*time.Second)
			j.After = at(slot0, -time.Nanosecond)
			return j
		}(), at(slot0, time.Second), Match{Slot: slot0}},
		{"after end_at", func() Job {
			j := job(t, "* * * * *", slot0-minute, 10*time.Second)
			j.End, j.HasEnd = slot0-1, true
			return j
		}(), at(slot0, time.Second), Match{}},
		{"a backlog longer than one walk", job(t, "@every 1s", slot0-maxScan-10, time.Minute), at(slot0, 0), Match{}},
		{"no schedule", Job{Cursor: slot0 - minute, Grace: time.Minute}, at(slot0, 0), Match{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Find(tc.job, tc.now); got != tc.want {
				t.Fatalf("Find at %s = %+v, want %+v", tc.now.Format(time.RFC3339Nano), got, tc.want)
			}
		})
	}
}

// TestJobOf reads the bounds and the grace of a stored spec.
func TestJobOf(t *testing.T) {
	t.Parallel()
	spec := &pb.JobSpec{
		Schedule: "* * * * *", Paused: true, Expect: &pb.Expect{StartWithin: durationpb.New(2 * time.Minute)},
		StartAt: timestamppb.New(time.Unix(slot0, 0)), EndAt: timestamppb.New(time.Unix(slot0+600, 0)),
	}
	j := JobOf(spec, slot0-60, nil)
	want := Job{Cursor: slot0 - 60, After: at(slot0, -time.Nanosecond), End: slot0 + 600, HasEnd: true, Paused: true, Grace: 2 * time.Minute}
	if j.Cursor != want.Cursor || !j.After.Equal(want.After) || j.End != want.End || !j.HasEnd || !j.Paused || j.Grace != want.Grace {
		t.Fatalf("JobOf = %+v, want %+v", j, want)
	}
}
