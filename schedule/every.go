package schedule

import (
	"math"
	"time"
)

// everySchedule fires at every multiple of period seconds since the Unix
// epoch. Anchoring on the epoch rather than on "now" makes the slots a pure
// function of the spec, so every leader computes the same ones.
type everySchedule struct {
	period int64 // seconds, >= 1
	loc    *time.Location
}

// Next returns the smallest multiple of the period strictly after after.
func (e *everySchedule) Next(after time.Time) time.Time {
	// Unix() floors, so a fractional after still yields the next multiple.
	k := floorDiv(after.Unix(), e.period)
	if k >= math.MaxInt64/e.period-1 {
		return time.Time{}
	}
	return time.Unix((k+1)*e.period, 0).In(e.loc)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
