package schedule

import (
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	cases := []struct{ name, spec, zone, after string }{
		{"every-second", "* * * * * *", "UTC", "2026-05-01T10:00:00Z"},
		{"five-field-daily", "0 2 * * *", "Europe/Berlin", "2026-05-01T10:00:00Z"},
		{"weekdays", "15 10 * * 1-5", "America/New_York", "2026-05-01T20:00:00Z"},
		{"feb-29", "0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z"},
		{"second-pass-of-fall-back", "* * * * * *", "Europe/Berlin", "2026-10-25T01:00:30Z"},
		{"hourly-in-fall-back-repeat", "0 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z"},
		{"real-time-feb-29", "* * 29 2 *", "Europe/Berlin", "2026-03-01T00:00:00Z"},
		{"every-30s", "@every 30s", "UTC", "2026-05-01T10:00:07Z"},
		{"every-90m-offset", "@every 90m offset 15m", "UTC", "2026-05-01T10:00:07Z"},
		{"last-weekday", "0 9 LW * *", "Europe/Berlin", "2026-05-01T10:00:00Z"},
		{"third-friday", "0 9 * * fri#3", "America/New_York", "2026-05-01T20:00:00Z"},
		{"last-friday-real-time", "*/15 * * * 5L", "Europe/Berlin", "2026-05-01T10:00:00Z"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := mustParse(b, c.spec, mustLoc(b, c.zone))
			after := mustTime(b, c.after)
			var sink time.Time
			for b.Loop() {
				sink = s.Next(after)
			}
			if sink.IsZero() {
				b.Fatal("no fire time")
			}
		})
	}
}

func BenchmarkSetNext(b *testing.B) {
	s, err := ParseSet([]string{"0 9 * * mon-fri", "0 12 * * sat", "0 18 LW * *"}, mustLoc(b, "Europe/Berlin"))
	if err != nil {
		b.Fatal(err)
	}
	after := mustTime(b, "2026-05-01T10:00:00Z")
	var sink time.Time
	for b.Loop() {
		sink = s.Next(after)
	}
	if sink.IsZero() {
		b.Fatal("no fire time")
	}
}
