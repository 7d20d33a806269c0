package schedule

import (
	"fmt"
	"strings"
	"time"
)

// atSchedule fires once, at a fixed instant.
type atSchedule struct {
	at time.Time // whole seconds, in the job's zone
}

// parseAt reads "@at TIME", TIME in RFC 3339 with Z or a UTC offset. The
// instant is absolute: the job's zone only decides how it is shown.
func parseAt(spec string, loc *time.Location) (Schedule, error) {
	text := strings.TrimSpace(strings.TrimPrefix(spec, "@at"))
	if text == "" {
		return nil, &SyntaxError{Part: "@at", Reason: `missing time (like "@at 2026-12-24T18:00:00Z")`}
	}
	t, err := time.Parse(time.RFC3339, text)
	if err != nil {
		return nil, &SyntaxError{Part: "@at", Reason: fmt.Sprintf(
			"%q is not an RFC 3339 time (like 2026-12-24T18:00:00Z or 2026-12-24T19:00:00+01:00)", text)}
	}
	if t.Nanosecond() != 0 {
		return nil, &SyntaxError{Part: "@at", Reason: fmt.Sprintf("%q has a fraction of a second (slots are whole seconds)", text)}
	}
	return &atSchedule{at: t.In(loc)}, nil
}

// Next returns the instant while it is still ahead, then the zero time.
func (a *atSchedule) Next(after time.Time) time.Time {
	if a.at.After(after) {
		return a.at
	}
	return time.Time{}
}

// passed reports whether the one slot lies at or before now.
func (a *atSchedule) passed(now time.Time) bool {
	return !a.at.After(now)
}
