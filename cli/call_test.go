package cli

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	c := call{addr: "127.0.0.1:7001", timeout: 3 * time.Second, subject: `job "x"`}
	stale := c
	stale.expectedVersion = 4
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
		{c, &unreachableError{nodes: []downNode{{"127.0.0.1:7001", "connection refused"}}},
			"cannot reach raftcron at 127.0.0.1:7001: connection refused"},
		{c, &unreachableError{nodes: []downNode{{"127.0.0.1:7001", "connection refused"}, {"127.0.0.1:7002", "i/o timeout"}}},
			"cannot reach raftcron at 127.0.0.1:7001 (connection refused), 127.0.0.1:7002 (i/o timeout)"},
		{c, status.Error(codes.Unavailable, "node is shut down"), "raftcron at 127.0.0.1:7001 is unavailable: node is shut down"},
		{c, errors.New("plain"), "plain"},
	}
	for _, tc := range cases {
		if got := tc.c.describe(tc.err).Error(); got != tc.want {
			t.Errorf("describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A node that could not be reached is described from its dialer, whatever
// gRPC's message says.
func TestUnreachableCause(t *testing.T) {
	t.Parallel()
	grpcMsg := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing"`)
	for _, tc := range []struct {
		d    *dialer
		want string
	}{
		{&dialer{last: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, "connection refused"},
		// A TLS node resets a plaintext client, or one without the client
		// certificate it requires, while the client is still writing.
		{&dialer{drop: &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}},
			"the node closed the connection (does it require TLS, --ca-cert, or a client certificate, --client-cert?)"},
		{&dialer{}, `connection error: desc = "transport: Error while dialing"`},
	} {
		if got := (&nodeConn{d: tc.d}).cause(grpcMsg); got != tc.want {
			t.Errorf("cause = %q, want %q", got, tc.want)
		}
	}
}

// A failed dial is described from its error, whatever gRPC's message says.
func TestDialCause(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
