package schedule

import (
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse time %q: %v", s, err)
	}
	return tm
}

func mustParse(t testing.TB, spec string, loc *time.Location) Schedule {
	t.Helper()
	s, err := Parse(spec, loc)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

// assertSequence checks successive Next results from after against want
// (RFC 3339 instants, compared as instants).
func assertSequence(t *testing.T, s Schedule, after string, want []string) {
	t.Helper()
	cur := mustTime(t, after)
	for i, w := range want {
		next := s.Next(cur)
		if !next.Equal(mustTime(t, w)) {
			t.Fatalf("step %d: Next(%s) = %s, want %s", i, cur.UTC().Format(time.RFC3339), next.UTC().Format(time.RFC3339), w)
		}
		cur = next
	}
}
