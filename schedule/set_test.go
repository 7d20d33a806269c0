package schedule

import (
	"errors"
	"testing"
	"time"
)

func TestSetIsTheUnion(t *testing.T) {
	t.Parallel()
	s, err := ParseSet([]string{"0 9 * * mon-fri", "0 12 * * sat", "0 9 * * 1"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	// 2026-05-01 is a Friday; Monday 09:00 is in two members and fires once.
	assertSequence(t, s, "2026-05-01T00:00:00Z", []string{
		"2026-05-01T09:00:00Z", "2026-05-02T12:00:00Z", "2026-05-04T09:00:00Z", "2026-05-05T09:00:00Z"})
}

func TestSetOfOneIsItsMember(t *testing.T) {
	t.Parallel()
	s, err := ParseSet([]string{"*/7 * * * *"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	m := mustParse(t, "*/7 * * * *", time.UTC)
	for after := mustTime(t, "2026-05-01T00:00:00Z"); after.Before(mustTime(t, "2026-05-01T03:00:00Z")); after = m.Next(after) {
		if got, want := s.Next(after), m.Next(after); !got.Equal(want) {
			t.Fatalf("Next(%s) = %s, want %s", after, got, want)
		}
	}
}

// Members that never fire again (a past @at) leave the others alone; a
// set none of whose members fires again has no next time.
func TestSetSkipsMembersThatAreDone(t *testing.T) {
	t.Parallel()
	s, err := ParseSet([]string{"@at 2026-05-01T12:00:00Z", "0 0 * * *"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	assertSequence(t, s, "2026-05-01T06:00:00Z", []string{"2026-05-01T12:00:00Z", "2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z"})
	done, err := ParseSet([]string{"@at 2026-05-01T12:00:00Z", "@at 2026-05-01T13:00:00Z"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := done.Next(mustTime(t, "2026-05-01T13:00:00Z")); !got.IsZero() {
		t.Fatalf("Next after every member = %s, want none", got)
	}
}

func TestSetErrorsNameTheIndex(t *testing.T) {
	t.Parallel()
	now := mustTime(t, "2026-05-01T00:00:00Z")
	tests := []struct {
		specs   []string
		index   int
		wantErr error
		wantMsg string
	}{
		{[]string{"0 9 * * *", "0 0 * 13 *"}, 1, ErrSyntax, "schedules[1]: month field: 13 is above 12"},
		{[]string{"0 9 * * fri#6"}, 0, ErrSyntax, `schedules[0]: day-of-week field: "fri#6": occurrence 6 is above 5`},
		{[]string{"@hourly", "@every 1h", "@every 1h offset 2h"}, 2, ErrSyntax, "schedules[2]: @every offset: 2h is not less than the interval 1h"},
		{[]string{"0 9 * * *", "0 0 30 2 *"}, 1, ErrNeverFires, "schedules[1]: never fires within 5 years"},
		{[]string{"0 9 * * *", "TZ=UTC 0 9 * * *"}, 1, ErrTimezonePrefix, "schedules[1]: the zone is the timezone field, not a TZ= prefix"},
	}
	for _, tc := range tests {
		err := ValidateSet(tc.specs, time.UTC, now)
		var se *SetError
		if !errors.As(err, &se) || se.Index != tc.index || !errors.Is(err, tc.wantErr) || err.Error() != tc.wantMsg {
			t.Errorf("ValidateSet(%q) = %v, want %q (index %d, %v)", tc.specs, err, tc.wantMsg, tc.index, tc.wantErr)
		}
	}
	if err := ValidateSet(nil, time.UTC, now); !errors.Is(err, ErrEmptySet) {
		t.Errorf("ValidateSet(nil) = %v, want ErrEmptySet", err)
	}
	// A past @at passes, as alone.
	if err := ValidateSet([]string{"@at 2025-01-01T00:00:00Z", "0 9 * * *"}, time.UTC, now); err != nil {
		t.Errorf("ValidateSet with a past @at = %v", err)
	}
}

// CachedSet shares parsed members with every other user of the cache.
func TestCachedSetSharesMembers(t *testing.T) {
	t.Parallel()
	s, err := CachedSetInZone([]string{"0 9 LW * *", "15 7 * * *"}, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	m, err := CachedInZone("15 7 * * *", "Europe/Berlin")
	if err != nil || s.members[1] != m {
		t.Fatalf("member 1 is not the cached schedule (%v)", err)
	}
	if _, err := CachedSetInZone([]string{"@hourly"}, "Mars/Olympus"); !errors.Is(err, ErrUnknownZone) {
		t.Fatalf("CachedSetInZone in an unknown zone = %v", err)
	}
}
