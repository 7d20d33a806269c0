package schedule

import (
	"math"
	"testing"
	"time"
)

func TestEveryAlignedToEpoch(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "@every 30s", time.UTC)
	// Two leaders asking at different moments land on the same slot grid.
	a := s.Next(mustTime(t, "2026-05-01T10:00:07Z"))
	b := s.Next(mustTime(t, "2026-05-01T10:00:21.9Z"))
	if want := mustTime(t, "2026-05-01T10:00:30Z"); !a.Equal(want) || !b.Equal(want) {
		t.Fatalf("Next = %s and %s, want both %s", a, b, want)
	}
	assertSequence(t, s, "2026-05-01T10:00:30Z", []string{"2026-05-01T10:01:00Z", "2026-05-01T10:01:30Z"})
}

func TestEveryOddPeriods(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, zone, after string
		want              []string
	}{
		// 1777593600 = 2026-05-01T00:00:00Z = 7*253941942 + 6, so the next multiple of 7 is one second later.
		{"@every 7s", "UTC", "2026-05-01T00:00:00Z", []string{"2026-05-01T00:00:01Z", "2026-05-01T00:00:08Z"}},
		// 1777593600 / 5400 = 329184 exactly: the slot itself is not after itself.
		{"@every 1h30m", "UTC", "2026-05-01T00:00:00Z", []string{"2026-05-01T01:30:00Z", "2026-05-01T03:00:00Z"}},
		// Alignment is in absolute time, whatever the zone: :00 UTC is :45 in Kathmandu.
		{"@every 1h", "Asia/Kathmandu", "2026-05-01T00:10:00Z", []string{"2026-05-01T01:00:00Z"}},
		// Daylight saving does not move absolute slots.
		{"@every 1h", "Europe/Berlin", "2026-10-25T00:30:00Z",
			[]string{"2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.spec+" "+tc.zone, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, mustLoc(t, tc.zone)), tc.after, tc.want)
		})
	}
}

func TestEveryBeforeEpoch(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "@every 1m", time.UTC)
	assertSequence(t, s, "1969-12-31T23:58:30Z", []string{"1969-12-31T23:59:00Z", "1970-01-01T00:00:00Z"})
}

func TestEveryOffset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, after string
		want        []string
	}{
		// 1777593600 = 2026-05-01T00:00:00Z is a multiple of 5400: slots at 00:15, 01:45, 03:15.
		{"@every 90m offset 15m", "2026-05-01T00:00:00Z", []string{"2026-05-01T00:15:00Z", "2026-05-01T01:45:00Z", "2026-05-01T03:15:00Z"}},
		{"@every 90m offset 15m", "2026-05-01T00:15:00Z", []string{"2026-05-01T01:45:00Z"}},
		{"@every 90m offset 15m", "2026-05-01T00:14:59.5Z", []string{"2026-05-01T00:15:00Z"}},
		{"@every 1h offset 0s", "2026-05-01T00:10:00Z", []string{"2026-05-01T01:00:00Z"}},
		{"@every 1h offset 59m59s", "2026-05-01T00:10:00Z", []string{"2026-05-01T00:59:59Z", "2026-05-01T01:59:59Z"}},
		{"@every 24h offset 6h", "2026-05-01T07:00:00Z", []string{"2026-05-02T06:00:00Z"}},
		// Before the epoch the grid continues: epoch + 15m - 90m.
		{"@every 90m offset 15m", "1969-12-31T22:00:00Z", []string{"1969-12-31T22:45:00Z", "1970-01-01T00:15:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.spec+" after "+tc.after, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, time.UTC), tc.after, tc.want)
		})
	}
	// Two leaders asking at different moments land on the same slot.
	s := mustParse(t, "@every 90m offset 15m", time.UTC)
	if a, b := s.Next(mustTime(t, "2026-05-01T00:20:00Z")), s.Next(mustTime(t, "2026-05-01T01:44:59Z")); !a.Equal(b) {
		t.Fatalf("Next from two moments of one interval: %s and %s", a, b)
	}
}

// Far from the epoch Next neither overflows nor repeats a slot.
func TestEveryOffsetAtTheEdges(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "@every 90m offset 15m", time.UTC)
	for _, after := range []time.Time{time.Unix(math.MaxInt64/2, 0), time.Unix(math.MinInt64/2-1e9, 0), {}} {
		if next := s.Next(after); !next.IsZero() && !next.After(after) {
			t.Errorf("Next(%d) = %d, not after", after.Unix(), next.Unix())
		}
	}
}
