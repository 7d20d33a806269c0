package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// runInProcess runs one command line in this process.
func runInProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

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
	down := closedPort(t)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "version", args: []string{"version"}, code: exitOK},
		{name: "help", args: []string{"job", "--help"}, code: exitOK},
		{name: "completion", args: []string{"completion", "bash"}, code: exitOK},
		{name: "completion of an unknown shell", args: []string{"completion", "tcsh"}, code: exitUsage, want: "tcsh"},
		{name: "unknown command", args: []string{"jobs"}, code: exitUsage, want: `unknown command "jobs"`},
		{name: "unknown subcommand", args: []string{"job", "frobnicate"}, code: exitUsage, want: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"job", "list", "--colour"}, code: exitUsage, want: "unknown flag: --colour"},
		{name: "missing argument", args: []string{"job", "get"}, code: exitUsage, want: "accepts 1 arg"},
		{name: "bad output format", args: []string{"job", "list", "-o", "xml"}, code: exitUsage, want: `"xml" is not table, json or yaml`},
		{name: "apply without file", args: []string{"job", "apply"}, code: exitUsage, want: "-f: required"},
		{name: "bad label", args: []string{"job", "list", "--label", "team"}, code: exitUsage, want: "--label"},
		{name: "unreachable", args: []string{"job", "get", "x", "--addr", down}, code: exitFailure, want: "cannot reach raftcron at " + down},
		{name: "missing job file", args: []string{"job", "apply", "-f", "/nonexistent/jobs.yaml"}, code: exitFailure, want: "-f: open /nonexistent/jobs.yaml"},
		{name: "run list limit too large", args: []string{"run", "list", "--limit", "5000"}, code: exitUsage, want: "--limit"},
		{name: "run get without id", args: []string{"run", "get"}, code: exitUsage, want: "accepts 1 arg"},
		{name: "fence check without job", args: []string{"fence", "check", "--token", "3"}, code: exitUsage, want: "--job: required"},
		{name: "fence check with token 0", args: []string{"fence", "check", "--job", "a", "--token", "0"}, code: exitUsage, want: "--token"},
		{name: "fence check with a negative token", args: []string{"fence", "check", "--job", "a", "--token", "-1"}, code: exitUsage, want: "--token"},
		{name: "job next without name or schedule", args: []string{"job", "next"}, code: exitUsage, want: "--schedule"},
		{name: "job next count too large", args: []string{"job", "next", "a", "--count", "101"}, code: exitUsage, want: "--count"},
		{name: "job trigger without name", args: []string{"job", "trigger"}, code: exitUsage, want: "accepts 1 arg"},
		{name: "unreachable watch", args: []string{"run", "watch", "--addr", down}, code: exitFailure, want: "cannot reach raftcron at " + down},
		{name: "unreachable fence check", args: []string{"fence", "check", "--job", "a", "--token", "1", "--addr", down}, code: exitFailure, want: "cannot reach raftcron at " + down},
		{name: "serve without id", args: []string{"serve", "--data-dir", t.TempDir()}, code: exitFailure, want: "--id: required"},
		{name: "serve peers without id", args: []string{"serve", "--id", "n1", "--data-dir", t.TempDir(), "--peers", "n2=127.0.0.1:7002"},
			code: exitFailure, want: "--peers: must contain this node's ID n1"},
		{name: "serve bad duration flag", args: []string{"serve", "--raft-lease", "soon"}, code: exitUsage, want: "--raft-lease"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runInProcess(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if tc.code == exitOK {
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
	if code != exitFailure || !strings.Contains(stderr, down) {
		t.Fatalf("RAFTCRON_ADDR ignored: exit %d, %q", code, stderr)
	}
	t.Setenv("RAFTCRON_TIMEOUT", "soon")
	code, _, stderr = runInProcess(t, "job", "get", "x")
	if code != exitFailure || !strings.Contains(stderr, "RAFTCRON_TIMEOUT") {
		t.Fatalf("bad RAFTCRON_TIMEOUT: exit %d, %q", code, stderr)
	}
}

func withDetails(t *testing.T, code codes.Code, msg string, details ...*errdetails.BadRequest) error {
	t.Helper()
	st := status.New(code, msg)
	for _, d := range details {
		var err error
		if st, err = st.WithDetails(d); err != nil {
			t.Fatal(err)
		}
	}
	return st.Err()
}

func TestDescribeNamesEveryViolation(t *testing.T) {
	err := withDetails(t, codes.InvalidArgument, "invalid job", &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: "schedule", Description: "end of range (61) above maximum (59)"},
		{Field: "http.url", Description: "must be absolute"},
	}})
	got := call{subject: `job "x"`}.describe(err).Error()
	want := `invalid job "x": schedule: end of range (61) above maximum (59); http.url: must be absolute`
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestDescribeNotLeaderNamesLastLeader(t *testing.T) {
	st, err := status.New(codes.Unavailable, "no leader").WithDetails(&errdetails.ErrorInfo{
		Reason: "NOT_LEADER", Domain: "raftcron.io",
		Metadata: map[string]string{"leader_id": "n2", "leader_address": "127.0.0.1:7002"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := call{addr: "127.0.0.1:7001"}.describe(st.Err()).Error()
	if got != "no leader (last known leader n2 at 127.0.0.1:7002)" {
		t.Fatalf("got %q", got)
	}
}

func TestDescribeOtherCodes(t *testing.T) {
	c := call{addr: "127.0.0.1:7001", timeout: 3 * time.Second, subject: `job "x"`}
	stale := c
	stale.expectedVersion = 4
	refused := c
	refused.dialer = &dialer{last: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	dropped := c
	dropped.dialer = &dialer{drop: &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}}
	cases := []struct {
		c    call
		err  error
		want string
	}{
		{c, status.Error(codes.NotFound, "job not found"), `job "x" not found`},
		{c, status.Error(codes.AlreadyExists, "exists"), `job "x" already exists`},
		{stale, status.Error(codes.FailedPrecondition, `job "x" is at version 5, expected version 4`),
			`version: stale: job "x" is at version 5, expected version 4; get it again and retry`},
		{stale, status.Error(codes.FailedPrecondition, ""), `version: stale: job "x" is no longer at version 4; get it again and retry`},
		// Without an expected version there is no version to be stale: a
		// refused precondition says what it is itself.
		{c, status.Error(codes.FailedPrecondition, "ACLs are bootstrapped already"), "ACLs are bootstrapped already"},
		{c, status.Error(codes.DeadlineExceeded, "deadline"), "no answer from raftcron at 127.0.0.1:7001 within 3s"},
		{refused, status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing"`),
			"cannot reach raftcron at 127.0.0.1:7001: connection refused"},
		// A TLS node resets a plaintext client, or one without the client
		// certificate it requires, while the client is still writing.
		{dropped, status.Error(codes.Unavailable, "write tcp 127.0.0.1:55952->127.0.0.1:7001: write: connection reset by peer"),
			"cannot reach raftcron at 127.0.0.1:7001: the node closed the connection (does it require TLS, --ca-cert, or a client certificate, --client-cert?)"},
		{c, status.Error(codes.Unavailable, "node is shut down"), "raftcron at 127.0.0.1:7001 is unavailable: node is shut down"},
		{c, errors.New("plain"), "plain"},
	}
	for _, tc := range cases {
		if got := tc.c.describe(tc.err).Error(); got != tc.want {
			t.Errorf("describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A failed dial is described from its error, whatever gRPC's message says.
func TestDialCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused"},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nowhere", IsNotFound: true}}, "no such host"},
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, "i/o timeout"},
		{errors.New("something else"), "something else"},
	} {
		if got := dialCause(tc.err); got != tc.want {
			t.Errorf("dialCause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// The dialer tells a node that ends the connection before saying anything
// (a TLS port facing a plaintext client) from one that answered first.
func TestDialerSeesANodeThatDropsTheConnection(t *testing.T) {
	silent := serveOnce(t, nil)
	answering := serveOnce(t, []byte("x"))
	for _, tc := range []struct {
		addr        string
		wantDropped bool
	}{{silent, true}, {answering, false}} {
		d := &dialer{}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		raw, err := d.dial(ctx, tc.addr)
		cancel()
		if err != nil {
			t.Fatalf("dial %s: %v", tc.addr, err)
		}
		conn, _, err := d.watch(insecure.NewCredentials()).ClientHandshake(context.Background(), tc.addr, raw)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for err == nil {
			_, err = conn.Read(make([]byte, 8))
		}
		conn.Close()
		if got := d.dropped() != nil; got != tc.wantDropped {
			t.Errorf("node that sent %v before closing: dropped() = %v (read ended with %v), want %v",
				tc.addr == answering, d.dropped(), err, tc.wantDropped)
		}
	}
}

// serveOnce accepts one connection on loopback, writes say to it and
// closes it.
func serveOnce(t *testing.T, say []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write(say)
		c.Close()
	}()
	return ln.Addr().String()
}

func TestOneLine(t *testing.T) {
	if got := oneLine("first\nsecond\r\n third\n"); got != "first; second; third" {
		t.Fatalf("got %q", got)
	}
}
