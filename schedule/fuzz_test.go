package schedule

import (
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"* * * * * *", "*/5 * * * * *", "0 2 * * *", "30 2 * * *", "0 * * * *", "0 0 29 2 *",
		"0 0 30 2 *", "0 0 13 * 5", "@hourly", "@weekly", "@every 30s", "@every 1h30m",
		"@every 500ms", "TZ=", "CRON_TZ=", "TZ=UTC * * * * *", "61 * * * *", "hello", "",
		"*/0 * * * *", "1-2/3-4 * * * *", "0-59/60 * * * *", "@every -5s", "? ? ? ? ? ?",
		"9223372036854775807 * * * *", "1,2,,3 * * * *", "@", "@every 2562047h",
	} {
		f.Add(seed)
	}
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	// Just before the spring-forward gap, so DST paths are exercised.
	base := time.Date(2026, 3, 29, 0, 59, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec, loc)
		if err != nil {
			return
		}
		first := s.Next(base)
		if first.IsZero() {
			return
		}
		if !first.After(base) {
			t.Fatalf("%q: Next(%s) = %s, not after", spec, base, first)
		}
		second := s.Next(first)
		if !second.IsZero() && !second.After(first) {
			t.Fatalf("%q: Next(%s) = %s, not after", spec, first, second)
		}
	})
}
