package cli

import (
	"net"
	"strings"
	"testing"
)

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestExitStatusAndOneLineErrors(t *testing.T) {
	t.Parallel()
	down := closedPort(t)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "version", args: []string{"version"}, code: ExitOK},
		{name: "help", args: []string{"job", "--help"}, code: ExitOK},
		{name: "completion", args: []string{"completion", "bash"}, code: ExitOK},
		{name: "completion of an unknown shell", args: []string{"completion", "tcsh"}, code: ExitUsage, want: "tcsh"},
		{name: "unknown command", args: []string{"jobs"}, code: ExitUsage, want: `unknown command "jobs"`},
		{name: "unknown subcommand", args: []string{"job", "frobnicate"}, code: ExitUsage, want: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"job", "list", "--colour"}, code: ExitUsage, want: "unknown flag: --colour"},
		{name: "missing argument", args: []string{"job", "get"}, code: ExitUsage, want: "accepts 1 arg"},
		{name: "bad output format", args: []string{"job", "list", "-o", "xml"}, code: ExitUsage, want: `"xml" is not table, json or yaml`},
		{name: "apply without file", args: []string{"job", "apply"}, code: ExitUsage, want: "-f: required"},
		{name: "bad label", args: []string{"job", "list", "--label", "team"}, code: ExitUsage, want: "--label"},
		{name: "unreachable", args: []string{"job", "get", "x", "--addr", down}, code: ExitFailure, want: "cannot reach raftcron at " + down},
		{name: "missing job file", args: []string{"job", "apply", "-f", "/nonexistent/jobs.yaml"}, code: ExitFailure, want: "-f: open /nonexistent/jobs.yaml"},
		{name: "run list limit too large", args: []string{"run", "list", "--limit", "5000"}, code: ExitUsage, want: "--limit"},
		{name: "run get without id", args: []string{"run", "get"}, code: ExitUsage, want: "accepts 1 arg"},
		{name: "fence check without job", args: []string{"fence", "check", "--token", "3"}, code: ExitUsage, want: "--job: required"},
		{name: "fence check with token 0", args: []string{"fence", "check", "--job", "a", "--token", "0"}, code: ExitUsage, want: "--token"},
		{name: "fence check with a negative token", args: []string{"fence", "check", "--job", "a", "--token", "-1"}, code: ExitUsage, want: "--token"},
		{name: "job next without name or schedule", args: []string{"job", "next"}, code: ExitUsage, want: "--schedule"},
		{name: "job next count too large", args: []string{"job", "next", "a", "--count", "101"}, code: ExitUsage, want: "--count"},
		{name: "job trigger without name", args: []string{"job", "trigger"}, code: ExitUsage, want: "accepts 1 arg"},
		{name: "unreachable watch", args: []string{"run", "watch", "--addr", down}, code: ExitFailure, want: "cannot reach raftcron at " + down},
		{name: "unreachable fence check", args: []string{"fence", "check", "--job", "a", "--token", "1", "--addr", down}, code: ExitFailure, want: "cannot reach raftcron at " + down},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runInProcess(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if tc.code == ExitOK {
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

func TestEnvironmentSetsClientFlags(t *testing.T) {
	down := closedPort(t)
	t.Setenv("RAFTCRON_ADDR", down)
	code, _, stderr := runInProcess(t, "job", "get", "x")
	if code != ExitFailure || !strings.Contains(stderr, down) {
		t.Fatalf("RAFTCRON_ADDR ignored: exit %d, %q", code, stderr)
	}
	t.Setenv("RAFTCRON_TIMEOUT", "soon")
	code, _, stderr = runInProcess(t, "job", "get", "x")
	if code != ExitFailure || !strings.Contains(stderr, "RAFTCRON_TIMEOUT") {
		t.Fatalf("bad RAFTCRON_TIMEOUT: exit %d, %q", code, stderr)
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	if got := oneLine("first\nsecond\r\n third\n"); got != "first; second; third" {
		t.Fatalf("got %q", got)
	}
}
