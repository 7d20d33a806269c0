package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRejects(t *testing.T) {
	tests := []struct {
		spec    string
		wantErr error
		wantMsg string
	}{
		{"TZ=UTC * * * * *", ErrTimezonePrefix, ""},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", ErrTimezonePrefix, ""},
		{"CRON_TZ=", ErrTimezonePrefix, ""},
		{"TZ=", ErrTimezonePrefix, ""},
		{"tz=UTC 0 2 * * *", ErrTimezonePrefix, ""},
		{"  TZ=UTC 0 2 * * *", ErrTimezonePrefix, ""},
		{"", ErrSyntax, "empty spec"},
		{"   ", ErrSyntax, "empty spec"},
		{"hello", ErrSyntax, "expected 5 to 6 fields"},
		{"61 * * * *", ErrSyntax, "end of range (61) above maximum (59): 61"},
		{"* 24 * * *", ErrSyntax, "above maximum (23)"},
		{"* * 0 * *", ErrSyntax, "below minimum (1)"},
		{"* * * 13 *", ErrSyntax, "above maximum (12)"},
		{"* * * * 7", ErrSyntax, "above maximum (6)"},
		{"*/0 * * * *", ErrSyntax, "step of range should be a positive number"},
		{"5-1 * * * *", ErrSyntax, "beyond end of range"},
		{"* * * * * * *", ErrSyntax, "expected 5 to 6 fields"},
		{"@fortnightly", ErrSyntax, "unrecognized descriptor"},
		{"@every", ErrSyntax, ""},
		{"@every soon", ErrSyntax, "failed to parse duration"},
		{"@every 500ms", ErrEveryInterval, ""},
		{"@every 1.5s", ErrEveryInterval, ""},
		{"@every 0s", ErrEveryInterval, ""},
		{"@every -1m", ErrEveryInterval, ""},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec, time.UTC)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Parse(%q) = %v, %v; want error %v", tc.spec, s, err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("Parse(%q) error %q does not mention %q", tc.spec, err, tc.wantMsg)
			}
		})
	}
}

// robfig's parser panics on a bare TZ= prefix; Parse refuses the prefix
// first, and the recover behind it turns any panic into an error.
func TestParseRobfigRecoversPanic(t *testing.T) {
	for _, spec := range []string{"TZ=", "CRON_TZ="} {
		if _, err := parseRobfig(spec); !errors.Is(err, ErrSyntax) {
			t.Errorf("parseRobfig(%q) = %v, want ErrSyntax", spec, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	for _, spec := range []string{
		"* * * * * *", "*/5 * * * * *", "0 2 * * *", "0 9 * jan-mar mon-fri", "? * * * ?",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"@every 30s", "@every 1h30m", " 0 2 * * * ",
	} {
		if _, err := Parse(spec, time.UTC); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
	}
}

func TestValidate(t *testing.T) {
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
