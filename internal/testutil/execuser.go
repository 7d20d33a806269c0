package testutil

import "os"

// ExecUser is the --exec-user of a node or worker that a test runs with
// exec allowed: one running as root refuses to start without it, and the
// tests' commands run as the test's own user, so "root" when the test runs
// as root and none otherwise.
func ExecUser() string {
	if os.Geteuid() == 0 {
		return "root"
	}
	return ""
}

// ExecUserArgs is ExecUser as flags of `raftcron serve` or `raftcron
// worker`: none when the test does not run as root.
func ExecUserArgs() []string {
	if u := ExecUser(); u != "" {
		return []string{"--exec-user", u}
	}
	return nil
}
