package schedule

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// everySchedule fires at offset + k·period seconds since the Unix epoch.
// Anchoring on the epoch rather than on "now" makes the slots a pure
// function of the spec, so every leader computes the same ones.
type everySchedule struct {
	period int64 // seconds, >= 1
	offset int64 // seconds, in [0, period)
	loc    *time.Location
}

const offsetWord = "offset"

// parseEvery reads "@every D" or "@every D offset O": whole seconds, D at
// least 1s, O in [0s, D). robfig would round sub-second and non-positive
// durations instead of refusing them, and knows no offset.
func parseEvery(spec string, loc *time.Location) (Schedule, error) {
	words := strings.Fields(spec)[1:]
	switch {
	case len(words) == 0:
		return nil, &SyntaxError{Part: "@every", Reason: `missing duration (like "@every 30s")`}
	case len(words) == 2 && words[1] == offsetWord:
		return nil, &SyntaxError{Part: "@every offset", Reason: `missing duration (like "@every 90m offset 15m")`}
	case len(words) != 1 && (len(words) != 3 || words[1] != offsetWord):
		return nil, &SyntaxError{Part: "@every", Reason: fmt.Sprintf(
			`want "@every D" or "@every D offset D", not %q`, strings.Join(words, " "))}
	}
	period, err := everyDuration("@every", words[0])
	if err != nil {
		return nil, err
	}
	if period < time.Second || period%time.Second != 0 {
		return nil, fmt.Errorf("%w, not %s", ErrEveryInterval, words[0])
	}
	e := &everySchedule{period: int64(period / time.Second), loc: loc}
	if len(words) == 3 {
		if e.offset, err = everyOffset(words[2], period, words[0]); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// everyOffset reads the offset of "@every D offset O" in seconds: whole,
// and in [0, D), so that each slot has exactly one k.
func everyOffset(text string, period time.Duration, periodText string) (int64, error) {
	offset, err := everyDuration("@every offset", text)
	switch {
	case err != nil:
		return 0, err
	case offset < 0 || offset%time.Second != 0:
		return 0, &SyntaxError{Part: "@every offset", Reason: fmt.Sprintf(
			"want a whole number of seconds, at least 0s, not %s", text)}
	case offset >= period:
		return 0, &SyntaxError{Part: "@every offset", Reason: fmt.Sprintf(
			"%s is not less than the interval %s", text, periodText)}
	}
	return int64(offset / time.Second), nil
}

// everyDuration reads one duration of an @every spec; part names it.
func everyDuration(part, text string) (time.Duration, error) {
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, &SyntaxError{Part: part, Reason: fmt.Sprintf("invalid duration %q (use Go syntax like 90s, 5m, 1h30m)", text)}
	}
	return d, nil
}

// Next returns the first slot strictly after after.
func (e *everySchedule) Next(after time.Time) time.Time {
	// Unix() floors, so a fractional after still yields the next slot.
	a := after.Unix()
	if a < math.MinInt64/2 { // before any calendar; keeps a-offset in range
		a = math.MinInt64 / 2
	}
	k := floorDiv(a-e.offset, e.period)
	if k >= math.MaxInt64/e.period-1 {
		return time.Time{}
	}
	return time.Unix((k+1)*e.period+e.offset, 0).In(e.loc)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
