package schedule

import (
	"errors"
	"strings"
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
		"0 16 */2 * sat", "0 0 13 * */2", "* 2 * * *", "30 */1 * * *", "*,5 * * * *", "5,* * * * *",
		"0-59/20 2 * * *", "? ? */3 * ?", "* 30 2 * * *", "@daily", "* * */31 2 *",
		"0 0 * 13 *", "1-2-3 * * * *", "*/2/3 * * * *", "*/-1 * * * *", "-5 * * * *", "0 0 * jan-xyz *", "@every soon",
		"0 0 L * *", "0 0 L-2 * *", "0 0 LW * *", "0 0 L-5W * *", "0 0 1W * *", "0 0 31W * *", "0 0 ? * 5L",
		"0 0 * * fri#3", "0 0 * * 7#5,sunL", "0 0 1,L,15 * mon#1", "L * * * * *", "0 0 * * fri#6", "0 0 * * 0#0",
		"0 0 L-32 * *", "0 0 32W * *", "0 0 * * L", "0 0 L#3 * *", "0 0 * * #", "0 0 W * *", "0 0 L-W * *",
		"@every 90m offset 15m", "@every 1h offset 2h", "@every 1s offset 0s", "@every 1h offset", "@every 2562047h offset 1s",
		"@at 2026-12-24T18:00:00Z", "@at 2026-12-24T19:00:00+01:00", "@at yesterday", "@at 0001-01-01T00:00:00Z",
		"@at 9999-12-31T23:59:59-23:59", "@at",
	} {
		f.Add(seed)
	}
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	// Just before Berlin's spring-forward gap and fall-back repeat, so the
	// DST paths of both kinds of spec are exercised.
	bases := []time.Time{
		time.Date(2026, 3, 29, 0, 59, 30, 0, time.UTC),
		time.Date(2026, 10, 25, 0, 59, 30, 0, time.UTC),
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec, loc)
		if err != nil {
			// A refusal says where the spec is wrong, never only robfig's words.
			var se *SyntaxError
			if errors.Is(err, ErrSyntax) && !errors.As(err, &se) && strings.TrimSpace(spec) != "" {
				t.Fatalf("%q: syntax error %q names no part of the spec", spec, err)
			}
			return
		}
		for _, base := range bases {
			prev := base
			for range 3 {
				next := s.Next(prev)
				if next.IsZero() {
					break
				}
				if !next.After(prev) {
					t.Fatalf("%q: Next(%s) = %s, not after", spec, prev, next)
				}
				prev = next
			}
		}
	})
}
