package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
)

// gcPercentUnderLimit is the collector's GOGC while a memory limit is in
// force and GOGC is not set: below the limit, the heap may grow to five
// times the live data before a collection instead of twice. A node's live
// heap is its registry and run ledger, long-lived, so each collection
// marks nearly all of it, and a wave of fires allocates several times it:
// at the default of 100 the collector ran twice or more per 10,000-fire
// wave on every node, a fifth of their CPU while the machine was busiest.
// Near the limit the limit rules, as it does at any GOGC: the collector
// runs as often as it must to stay under it, so the heap never outgrows
// what --memory-limit allows.
const gcPercentUnderLimit = 400

// gcPercent decides the GOGC to set for the memory limit in force (none:
// math.MaxInt64) and the GOGC environment variable; ok is false when the
// runtime's own setting stands: GOGC was set, or no limit bounds a heap
// growing faster.
func gcPercent(limit int64, gogc string) (percent int, ok bool) {
	if gogc != "" || limit == math.MaxInt64 {
		return 0, false
	}
	return gcPercentUnderLimit, true
}

// applyGCPercent sets the collector's GOGC for limit and returns it, and
// where it came from, for the start-up log.
func applyGCPercent(limit int64) (percent, source string) {
	gogc := os.Getenv("GOGC")
	p, ok := gcPercent(limit, gogc)
	switch {
	case ok:
		debug.SetGCPercent(p)
		return strconv.Itoa(p), "memory limit"
	case gogc != "":
		return gogc, "GOGC"
	}
	return "100", "default (no memory limit)"
}
