package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/cli"
)

// runInProcess runs one command line in this process.
func runInProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// The binary holds serve, dev and the client commands, each with the exit
// statuses of the contract.
func TestExitStatusAndOneLineErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "version", args: []string{"version"}, code: cli.ExitOK},
		{name: "dev with 4 nodes", args: []string{"dev", "--nodes", "4"}, code: cli.ExitUsage, want: "--nodes"},
		{name: "serve without id", args: []string{"serve", "--data-dir", t.TempDir()}, code: cli.ExitFailure, want: "--id: required"},
		{name: "serve peers without id", args: []string{"serve", "--id", "n1", "--data-dir", t.TempDir(), "--peers", "n2=127.0.0.1:7002"},
			code: cli.ExitFailure, want: "--peers: must contain this node's ID n1"},
		{name: "serve bad duration flag", args: []string{"serve", "--raft-lease", "soon"}, code: cli.ExitUsage, want: "--raft-lease"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runInProcess(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if tc.code == cli.ExitOK {
				if stderr != "" {
					t.Fatalf("stderr on success: %q", stderr)
				}
				return
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "raftcron: ") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q, want one line containing %q", stderr, tc.want)
			}
		})
	}
}
