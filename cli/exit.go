package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses are part of the external contract, of every command alike.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Execute runs root with args and returns the exit status. Every error is
// printed as exactly one line on root's stderr.
func Execute(root *cobra.Command, args []string) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	return report(root, cmd, err)
}

// failure marks an error met while doing the work (exit 1). Everything else
// cobra returns (unknown command or flag, wrong arguments) is a usage error.
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// usageError is a usage mistake found by our own code rather than by cobra.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

// exitStatus ends a command with the exit status of a command it ran
// (checkin NAME -- CMD), whatever it is; err, if set, is the one line
// said on stderr (the command did not start).
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// Usagef is a usage error (exit 2) found by a command's own checks.
func Usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// RunE tags the errors of a command's work as failures (exit 1), keeping
// usage errors; every command's RunE goes through it.
func RunE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var u *usageError
		if err == nil || errors.As(err, &u) {
			return err
		}
		return &failure{err: err}
	}
}

func exitCode(err error) int {
	var f *failure
	var s *exitStatus
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &s):
		return s.code
	case errors.As(err, &f):
		return ExitFailure
	default:
		return ExitUsage
	}
}

func report(root, cmd *cobra.Command, err error) int {
	code := exitCode(err)
	stderr := root.ErrOrStderr()
	var s *exitStatus
	if errors.As(err, &s) {
		if s.err != nil {
			fmt.Fprintf(stderr, "raftcron: %s\n", oneLine(s.err.Error()))
		}
		return code
	}
	switch code {
	case ExitFailure:
		fmt.Fprintf(stderr, "raftcron: %s\n", oneLine(err.Error()))
	case ExitUsage:
		path := "raftcron"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "raftcron: %s (see '%s --help')\n", oneLine(err.Error()), path)
	}
	return code
}

// oneLine keeps the contract of one line per error even when a library's
// message spans several.
func oneLine(s string) string {
	lines := strings.FieldsFunc(strings.TrimSpace(s), func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}
