package schedule

import (
	"testing"
	"time"
)

func TestInterval(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  time.Duration
		ok    bool
	}{
		{[]string{"@every 90m offset 15m"}, 90 * time.Minute, true},
		{[]string{"@every 1s"}, time.Second, true},
		{[]string{"*/5 * * * *"}, 0, false},
		{[]string{"@at 2026-12-24T18:00:00Z"}, 0, false},
		{[]string{"@daily", "@every 2h", "@every 30m"}, 30 * time.Minute, true},
		{[]string{"@daily", "0 12 * * sat"}, 0, false},
	} {
		s, err := ParseSet(tc.specs, time.UTC)
		if err != nil {
			t.Fatalf("%q: %v", tc.specs, err)
		}
		var sched Schedule = s
		if len(tc.specs) == 1 {
			sched = s.members[0]
		}
		if got, ok := Interval(sched); got != tc.want || ok != tc.ok {
			t.Errorf("Interval(%q) = %v, %v; want %v, %v", tc.specs, got, ok, tc.want, tc.ok)
		}
	}
}
