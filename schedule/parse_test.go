package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		wantErr error
		wantMsg string // the whole message
	}{
		{"TZ=UTC * * * * *", ErrTimezonePrefix, ErrTimezonePrefix.Error()},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", ErrTimezonePrefix, ErrTimezonePrefix.Error()},
		{"CRON_TZ=", ErrTimezonePrefix, ErrTimezonePrefix.Error()},
		{"TZ=", ErrTimezonePrefix, ErrTimezonePrefix.Error()},
		{"tz=UTC 0 2 * * *", ErrTimezonePrefix, ErrTimezonePrefix.Error()},
		{"  TZ=UTC 0 2 * * *", ErrTimezonePrefix, ErrTimezonePrefix.Error()},
		{"", ErrSyntax, "bad cron syntax: empty spec"},
		{"   ", ErrSyntax, "bad cron syntax: empty spec"},
		{"hello", ErrSyntax, "want 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; found 1"},
		{"* * * * * * *", ErrSyntax, "want 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; found 7"},
		// Each field, five fields and six.
		{"61 * * * *", ErrSyntax, "minute field: 61 is above 59"},
		{"* 24 * * *", ErrSyntax, "hour field: 24 is above 23"},
		{"* * 0 * *", ErrSyntax, "day-of-month field: 0 is below 1"},
		{"* * * 13 *", ErrSyntax, "month field: 13 is above 12"},
		{"* * * 0 *", ErrSyntax, "month field: 0 is below 1"},
		{"* * * * 7", ErrSyntax, "day-of-week field: 7 is above 6"},
		{"60 * * * * *", ErrSyntax, "seconds field: 60 is above 59"},
		{"* 60 * * * *", ErrSyntax, "minute field: 60 is above 59"},
		{"* * 24 * * *", ErrSyntax, "hour field: 24 is above 23"},
		{"* * * 32 * *", ErrSyntax, "day-of-month field: 32 is above 31"},
		{"* * * * 13 *", ErrSyntax, "month field: 13 is above 12"},
		{"* * * * * 7", ErrSyntax, "day-of-week field: 7 is above 6"},
		// The first field at fault is the one named.
		{"0 0 32 13 *", ErrSyntax, "day-of-month field: 32 is above 31"},
		// Each rule of a field.
		{"* * 1-40 * *", ErrSyntax, "day-of-month field: 40 is above 31"},
		{"0,15,75 * * * *", ErrSyntax, "minute field: 75 is above 59"},
		{"*/0 * * * *", ErrSyntax, `minute field: step of "*/0" must be at least 1`},
		{"* */-1 * * *", ErrSyntax, "hour field: step -1 must be at least 1"},
		{"5-1 * * * *", ErrSyntax, `minute field: range "5-1" runs backwards (5 is after 1)`},
		{"1-2-3 * * * *", ErrSyntax, `minute field: "1-2-3" has more than one "-"`},
		{"*/2/3 * * * *", ErrSyntax, `minute field: "*/2/3" has more than one "/"`},
		{"-5 * * * *", ErrSyntax, `minute field: a number is missing in "-5"`},
		{"*/ * * * *", ErrSyntax, `minute field: a number is missing in "*/"`},
		{"L * * * *", ErrSyntax, `minute field: "L" is only allowed in the day-of-month and day-of-week fields`},
		{"0 0 * JAN-XYZ *", ErrSyntax, `month field: "XYZ" is not a number (want 1-12 or jan-dec)`},
		{"0 0 * * funday", ErrSyntax, `day-of-week field: "funday" is not a number (want 0-6 or sun-sat)`},
		// Descriptors and @every.
		{"@fortnightly", ErrSyntax, `unknown descriptor "@fortnightly" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration> [offset <duration>] or @at <RFC 3339 time>)`},
		{"@everyday", ErrSyntax, `unknown descriptor "@everyday" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration> [offset <duration>] or @at <RFC 3339 time>)`},
		{"@every", ErrSyntax, `@every: missing duration (like "@every 30s")`},
		{"@every soon", ErrSyntax, `@every: invalid duration "soon" (use Go syntax like 90s, 5m, 1h30m)`},
		{"@every 500ms", ErrEveryInterval, "@every: want a whole number of seconds, at least 1s, not 500ms"},
		{"@every 1.5s", ErrEveryInterval, "@every: want a whole number of seconds, at least 1s, not 1.5s"},
		{"@every 0s", ErrEveryInterval, "@every: want a whole number of seconds, at least 1s, not 0s"},
		{"@every -1m", ErrEveryInterval, "@every: want a whole number of seconds, at least 1s, not -1m"},
		{"@every 1h offset 2h", ErrSyntax, "@every offset: 2h is not less than the interval 1h"},
		{"@every 1h offset 1h", ErrSyntax, "@every offset: 1h is not less than the interval 1h"},
		{"@every 1h offset", ErrSyntax, `@every offset: missing duration (like "@every 90m offset 15m")`},
		{"@every 1h offset soon", ErrSyntax, `@every offset: invalid duration "soon" (use Go syntax like 90s, 5m, 1h30m)`},
		{"@every 1h offset -5m", ErrSyntax, "@every offset: want a whole number of seconds, at least 0s, not -5m"},
		{"@every 1h offset 1.5s", ErrSyntax, "@every offset: want a whole number of seconds, at least 0s, not 1.5s"},
		{"@every 1h after 5m", ErrSyntax, `@every: want "@every D" or "@every D offset D", not "1h after 5m"`},
		{"@every 500ms offset 0s", ErrEveryInterval, "@every: want a whole number of seconds, at least 1s, not 500ms"},
		{"@at yesterday", ErrSyntax, `@at: "yesterday" is not an RFC 3339 time (like 2026-12-24T18:00:00Z or 2026-12-24T19:00:00+01:00)`},
		{"@at 2026-12-24 18:00", ErrSyntax, `@at: "2026-12-24 18:00" is not an RFC 3339 time (like 2026-12-24T18:00:00Z or 2026-12-24T19:00:00+01:00)`},
		{"@at 2026-12-24T18:00:00", ErrSyntax, `@at: "2026-12-24T18:00:00" is not an RFC 3339 time (like 2026-12-24T18:00:00Z or 2026-12-24T19:00:00+01:00)`},
		{"@at 2026-12-24T18:00:00.5Z", ErrSyntax, `@at: "2026-12-24T18:00:00.5Z" has a fraction of a second (slots are whole seconds)`},
		{"@at", ErrSyntax, `@at: missing time (like "@at 2026-12-24T18:00:00Z")`},
		// Quartz day items where they do not belong, or out of bounds.
		{"L * * * * *", ErrSyntax, `seconds field: "L" is only allowed in the day-of-month and day-of-week fields`},
		{"0 L * * *", ErrSyntax, `hour field: "L" is only allowed in the day-of-month and day-of-week fields`},
		{"0 0 * L *", ErrSyntax, `month field: "L" is only allowed in the day-of-month and day-of-week fields`},
		{"0,15W * * * *", ErrSyntax, `minute field: "15W" is only allowed in the day-of-month and day-of-week fields`},
		{"0 0 * fri#3 *", ErrSyntax, `month field: "fri#3" is only allowed in the day-of-month and day-of-week fields`},
		{"0 0 * * fri#6", ErrSyntax, `day-of-week field: "fri#6": occurrence 6 is above 5`},
		{"0 0 * * 0#0", ErrSyntax, `day-of-week field: "0#0": occurrence 0 is below 1`},
		{"0 0 * * 8#1", ErrSyntax, `day-of-week field: "8#1": day 8 is above 7`},
		{"0 0 * * 5#", ErrSyntax, `day-of-week field: "5#": want DOW#N, N being 1-5`},
		{"0 0 * * funday#2", ErrSyntax, `day-of-week field: "funday#2": "funday" is not a day of the week (0-7 or sun-sat)`},
		{"0 0 * * 1-5L", ErrSyntax, `day-of-week field: "1-5L": "1-5" is not a day of the week (0-7 or sun-sat)`},
		{"0 0 * * L", ErrSyntax, `day-of-week field: "L": ambiguous (Quartz reads it as Saturday): write 6 or sat, or DOWL such as 5L for the last Friday`},
		{"0 0 * * sat,sun,L", ErrSyntax, `day-of-week field: "L": ambiguous (Quartz reads it as Saturday): write 6 or sat, or DOWL such as 5L for the last Friday`},
		{"0 0 * * 15W", ErrSyntax, `day-of-week field: "15W": L, L-N, LW and NW belong in the day-of-month field`},
		{"0 0 * * LW", ErrSyntax, `day-of-week field: "LW": L, L-N, LW and NW belong in the day-of-month field`},
		{"0 0 L-32 * *", ErrSyntax, `day-of-month field: "L-32": offset 32 is above 30`},
		{"0 0 L-31 * *", ErrSyntax, `day-of-month field: "L-31": offset 31 is above 30`},
		{"0 0 L-99999999999999999999 * *", ErrSyntax, `day-of-month field: "L-99999999999999999999": offset 99999999999999999999 is above 30`},
		{"0 0 32W * *", ErrSyntax, `day-of-month field: "32W": day 32 is above 31`},
		{"0/5 * * 32W 1 *", ErrSyntax, `day-of-month field: "32W": day 32 is above 31`}, // Quartz testQtz96
		{"0 0 0W * *", ErrSyntax, `day-of-month field: "0W": day 0 is below 1`},
		{"0 0 L- * *", ErrSyntax, `day-of-month field: "L-": want 1-31, L, L-N, LW, L-NW or NW`},
		{"0 0 1-15W * *", ErrSyntax, `day-of-month field: "1-15W": want 1-31, L, L-N, LW, L-NW or NW`},
		{"0 0 L/2 * *", ErrSyntax, `day-of-month field: "L/2": want 1-31, L, L-N, LW, L-NW or NW`},
		{"0 0 5L * *", ErrSyntax, `day-of-month field: "5L": DOW#N and DOWL belong in the day-of-week field`},
		{"0 0 fri#3 * *", ErrSyntax, `day-of-month field: "fri#3": DOW#N and DOWL belong in the day-of-week field`},
		// The first field at fault is named, items or not.
		{"61 0 L * *", ErrSyntax, "minute field: 61 is above 59"},
		{"0 0 L-40 * fri#6", ErrSyntax, `day-of-month field: "L-40": offset 40 is above 30`},
		{"0 0 L,40 * *", ErrSyntax, "day-of-month field: 40 is above 31"},
		{"0 0 40 * fri#6", ErrSyntax, "day-of-month field: 40 is above 31"},
		{"0 0 L 13 5L", ErrSyntax, "month field: 13 is above 12"},
		{"0 0 L * 9", ErrSyntax, "day-of-week field: 9 is above 6"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec, time.UTC)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Parse(%q) = %v, %v; want error %v", tc.spec, s, err, tc.wantErr)
			}
			if err.Error() != tc.wantMsg {
				t.Fatalf("Parse(%q) error\n got  %q\n want %q", tc.spec, err, tc.wantMsg)
			}
		})
	}
}

// A field error says which field, so a caller can point at it.
func TestSyntaxErrorNamesThePart(t *testing.T) {
	_, err := Parse("0 0 * 13 *", time.UTC)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Part != "month field" || se.Reason != "13 is above 12" {
		t.Fatalf("Parse error %#v, want a *SyntaxError for the month field", err)
	}
}

// robfig's parser panics on a bare TZ= prefix; Parse refuses the prefix
// first, and the recover behind it turns any panic into an error.
func TestParseRobfigRecoversPanic(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"TZ=", "CRON_TZ="} {
		if _, err := parseWith(parser, spec); err == nil {
			t.Errorf("parseWith(%q): no error", spec)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"* * * * * *", "*/5 * * * * *", "0 2 * * *", "0 9 * jan-mar mon-fri", "? * * * ?",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"@every 30s", "@every 1h30m", " 0 2 * * * ",
		"0 0 L * *", "0 0 l-3 * ?", "0 0 LW * *", "0 0 lw * *", "0 0 L-2W * *", "0 0 15W * *", "0 0 1,L * *",
		"0 0 ? * 5L", "0 0 * * friL", "0 0 * * FRI#3", "0 0 * * 5#3,1#1", "0 0 * * 7L", "0 0 * * 7#5", "0 0 * * mon-fri,5L",
		"@every 90m offset 15m", "@every 1h offset 0s", "@at 2026-12-24T18:00:00Z", "@at 2026-12-24T19:00:00+01:00",
	} {
		if _, err := Parse(spec, time.UTC); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	now := mustTime(t, "2026-05-01T00:00:00Z")
	tests := []struct {
		spec    string
		wantErr error
	}{
		{"0 2 * * *", nil},
		{"0 0 29 2 *", nil}, // 2028-02-29 is within five years
		{"0 0 30 2 *", ErrNeverFires},
		{"0 0 31 4 *", ErrNeverFires},
		{"@every 1h", nil},
		{"TZ=UTC 0 2 * * *", ErrTimezonePrefix},
		{"61 * * * *", ErrSyntax},
	}
	for _, tc := range tests {
		if err := Validate(tc.spec, time.UTC, now); !errors.Is(err, tc.wantErr) {
			t.Errorf("Validate(%q) = %v, want %v", tc.spec, err, tc.wantErr)
		}
	}
}

func TestFiresWithin(t *testing.T) {
	t.Parallel()
	from := mustTime(t, "2026-05-01T10:30:00Z")
	hourly := mustParse(t, "0 * * * *", time.UTC)
	if !FiresWithin(hourly, from, 30*time.Minute) {
		t.Error("hourly should fire within 30m of 10:30 (at 11:00, the window's end is inclusive)")
	}
	if FiresWithin(hourly, from, 29*time.Minute) {
		t.Error("hourly should not fire within 29m of 10:30")
	}
	if FiresWithin(mustParse(t, "0 0 30 2 *", time.UTC), from, 100*365*24*time.Hour) {
		t.Error("Feb 30 never fires")
	}
}

func TestLoadLocation(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "EST5EDT", "America/Port-au-Prince"} {
		loc, err := LoadLocation(name)
		if err != nil || loc == nil || loc == time.Local {
			t.Errorf("LoadLocation(%q) = %v, %v", name, loc, err)
		}
	}
	for _, name := range []string{"Local", "localtime", "posixrules", "posix/Europe/Berlin", "right/UTC", "Mars/Olympus",
		"../../etc/passwd", "/etc/localtime", "Europe/Berlin ", strings.Repeat("A", 65)} {
		if _, err := LoadLocation(name); !errors.Is(err, ErrUnknownZone) {
			t.Errorf("LoadLocation(%q) = %v, want ErrUnknownZone", name, err)
		}
	}
	a, _ := LoadLocation("Asia/Tokyo")
	b, _ := LoadLocation("Asia/Tokyo")
	if a != b {
		t.Error("second load of a zone is not served from the cache")
	}
}
