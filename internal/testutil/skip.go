package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true), where whatever a
// test needs has been installed: a test that cannot run fails there.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips the test, saying why it cannot run here (no root, a
// tool or a system user missing), or fails it under CI.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: whatever a test needs must be installed)", reason)
	}
	t.Skip(reason)
}

// SkipStepOrFail is SkipOrFail for one step of a test that goes on
// without it: it logs why the step is left out, or fails the test under
// CI. The caller leaves the step out when it returns.
func SkipStepOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: whatever a test needs must be installed)", reason)
	}
	t.Logf("skipping a step: %s", reason)
}

// NeedRoot skips the test (fails it under CI) unless it runs as root;
// why says what needs root.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "%s needs root", why)
	}
}

// NeedTool returns the path of a program on PATH, or skips the test (fails
// it under CI); how says how to install it.
func NeedTool(t testing.TB, name, how string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, "%s not found on PATH: %s", name, how)
	}
	return p
}
