package worker

import "testing"

// Plain is r without its attempt, as a Run made by hand is.
func Plain(r Run) Run {
	r.at = nil
	return r
}

// SetEUID makes the worker believe it runs as euid until the test ends.
// Tests that call it must not run in parallel.
func SetEUID(t testing.TB, euid int) {
	old := geteuid
	geteuid = func() int { return euid }
	t.Cleanup(func() { geteuid = old })
}
