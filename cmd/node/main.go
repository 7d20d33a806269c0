// Command raftcron is the raftcron node (serve) and its command-line client.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags '-X main.version=...'.
var version = "dev"

// Exit statuses are part of the external contract.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns its exit status. Every error is
// printed as exactly one line on stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	return report(stderr, cmd, err)
}

// failure marks an error met while doing the work (exit 1). Everything else
// cobra returns (unknown command or flag, wrong arguments) is a usage error.
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// usageError is a usage mistake found by our own code rather than by cobra.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// runE tags the errors of a command's work as failures, keeping usage errors.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
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
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &f):
		return exitFailure
	default:
		return exitUsage
	}
}

func report(stderr io.Writer, cmd *cobra.Command, err error) int {
	code := exitCode(err)
	switch code {
	case exitFailure:
		fmt.Fprintf(stderr, "raftcron: %s\n", oneLine(err.Error()))
	case exitUsage:
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
