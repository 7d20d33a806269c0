package schedule

import (
	"errors"
	"testing"
	"time"
)

func TestAtFiresOnce(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"@at 2026-12-24T18:00:00Z", "@at 2026-12-24T19:00:00+01:00", "@at   2026-12-24T13:00:00-05:00 "} {
		s := mustParse(t, spec, mustLoc(t, "Europe/Berlin"))
		at := mustTime(t, "2026-12-24T18:00:00Z")
		if got := s.Next(mustTime(t, "2026-01-01T00:00:00Z")); !got.Equal(at) {
			t.Errorf("%q: Next before = %s, want %s", spec, got, at)
		}
		if got := s.Next(at.Add(-time.Nanosecond)); !got.Equal(at) {
			t.Errorf("%q: Next just before = %s, want %s", spec, got, at)
		}
		for _, after := range []time.Time{at, at.Add(time.Second), at.AddDate(1, 0, 0)} {
			if got := s.Next(after); !got.IsZero() {
				t.Errorf("%q: Next(%s) = %s, want none", spec, after, got)
			}
		}
	}
}

// A past @at is a valid job that has no next slot, so a job file applied
// again after its time does not turn invalid; a future one must still be
// within the five years every schedule is held to.
func TestAtValidation(t *testing.T) {
	t.Parallel()
	now := mustTime(t, "2026-05-01T00:00:00Z")
	tests := []struct {
		spec    string
		wantErr error
	}{
		{"@at 2026-12-24T18:00:00Z", nil},
		{"@at 2026-05-01T00:00:00Z", nil}, // now: passed, accepted
		{"@at 2025-12-24T18:00:00Z", nil},
		{"@at 2031-04-30T23:59:59Z", nil},
		{"@at 2031-05-01T00:00:01Z", ErrNeverFires},
	}
	for _, tc := range tests {
		if err := Validate(tc.spec, time.UTC, now); !errors.Is(err, tc.wantErr) {
			t.Errorf("Validate(%q) = %v, want %v", tc.spec, err, tc.wantErr)
		}
	}
}
