package worker

import "testing"

// SetEUID makes the worker believe it runs as euid until the test ends.
// Tests that call it must not run in parallel.
func SetEUID(t testing.TB, euid int) {
	old := geteuid
	geteuid = func() int { return euid }
	t.Cleanup(func() { geteuid = old })
}
