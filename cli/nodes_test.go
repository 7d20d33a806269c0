package cli

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// getServer answers GetJob with answer's error (nil: the job) and counts
// the calls that reached it.
type getServer struct {
	pb.UnimplementedJobServiceServer
	answer func() error
	calls  atomic.Int32
}

func (s *getServer) GetJob(_ context.Context, req *pb.GetJobRequest) (*pb.GetJobResponse, error) {
	s.calls.Add(1)
	if err := s.answer(); err != nil {
		return nil, err
	}
	return &pb.GetJobResponse{Job: &pb.Job{Spec: &pb.JobSpec{Name: req.GetName(), Schedule: "@hourly"}, Version: 1}}, nil
}

// serveGet serves s on a loopback port until the test ends.
func serveGet(t *testing.T, answer func() error) (*getServer, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &getServer{answer: answer}
	gs := grpc.NewServer()
	pb.RegisterJobServiceServer(gs, s)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return s, ln.Addr().String()
}

func answers(err error) func() error { return func() error { return err } }

// getThrough calls GetJob through the nodes of addrs, as a command does,
// bounded by timeout.
func getThrough(t *testing.T, timeout time.Duration, addrs ...string) (*nodes, error) {
	t.Helper()
	o := &clientOptions{addr: strings.Join(addrs, ","), timeout: timeout}
	conn, err := o.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := o.callContext(context.Background())
	defer cancel()
	_, err = pb.NewJobServiceClient(conn).GetJob(ctx, &pb.GetJobRequest{Name: "x"})
	return conn, err
}

// A list whose first node is down reaches the next one, and the later
// calls of the command go straight to the node that answered.
func TestNodesGoOnPastADownNode(t *testing.T) {
	t.Parallel()
	down := closedPort(t)
	s, up := serveGet(t, answers(nil))
	conn, err := getThrough(t, 5*time.Second, down, up)
	if err != nil {
		t.Fatalf("GetJob through %s,%s: %v", down, up, err)
	}
	if got := conn.order()[0]; got != up {
		t.Fatalf("the next call goes to %s first, want %s, which answered", got, up)
	}
	if s.calls.Load() != 1 {
		t.Fatalf("%d calls reached %s, want 1", s.calls.Load(), up)
	}
}

// With every node down the error names each address and why.
func TestNodesAllDown(t *testing.T) {
	t.Parallel()
	a, b := closedPort(t), closedPort(t)
	_, err := getThrough(t, 5*time.Second, a, b)
	var down *unreachableError
	if !errors.As(err, &down) {
		t.Fatalf("err = %v, want an *unreachableError", err)
	}
	if want := "cannot reach raftcron at " + a + ", " + b + ": connection refused"; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("code %s, want Unavailable", status.Code(err))
	}
	if mayHaveRun(err) {
		t.Fatal("a call that reached no node may have run, says mayHaveRun")
	}
}

// A node without a leader that names one sends the call there; one that
// names none sends it to the next address.
func TestNodesFollowNotLeader(t *testing.T) {
	t.Parallel()
	leader, leaderAddr := serveGet(t, answers(nil))
	pointing, pointingAddr := serveGet(t, answers(cluster.NotLeaderStatus("no leader here", "n3", leaderAddr)))
	if _, err := getThrough(t, 5*time.Second, pointingAddr); err != nil {
		t.Fatalf("GetJob through %s, which names the leader %s: %v", pointingAddr, leaderAddr, err)
	}
	if pointing.calls.Load() != 1 || leader.calls.Load() != 1 {
		t.Fatalf("calls: %d to the node naming the leader, %d to the leader; want 1 and 1",
			pointing.calls.Load(), leader.calls.Load())
	}

	other, otherAddr := serveGet(t, answers(nil))
	clueless, cluelessAddr := serveGet(t, answers(cluster.NotLeaderStatus("no leader known", "", "")))
	if _, err := getThrough(t, 5*time.Second, cluelessAddr, otherAddr); err != nil {
		t.Fatalf("GetJob through %s,%s: %v", cluelessAddr, otherAddr, err)
	}
	if clueless.calls.Load() != 1 || other.calls.Load() != 1 {
		t.Fatalf("calls: %d to the node knowing no leader, %d to the next; want 1 and 1",
			clueless.calls.Load(), other.calls.Load())
	}
}

// NOT_LEADER is retried until a leader answers, and until the deadline
// when none does; it is what the call returns then.
func TestNodesRetryNotLeaderUntilTheDeadline(t *testing.T) {
	t.Parallel()
	var refusals atomic.Int32
	s, addr := serveGet(t, func() error {
		if refusals.Add(1) <= 2 {
			return cluster.NotLeaderStatus("election", "", "")
		}
		return nil
	})
	if _, err := getThrough(t, 5*time.Second, addr); err != nil || s.calls.Load() != 3 {
		t.Fatalf("err %v after %d calls, want success at the third", err, s.calls.Load())
	}

	// A deadline that cuts a call short is that call's error (it may have
	// been applied), so this one falls inside a wait: the waits double from
	// 50 ms, and after the calls at 0, 50, 150, 350 and 750 ms the next is
	// 800 ms later. Mid-way it leaves each call 100 ms, which a loaded
	// 2-core machine needs.
	const deadline = 1300 * time.Millisecond
	_, always := serveGet(t, answers(cluster.NotLeaderStatus("election", "", "")))
	began := time.Now()
	_, err := getThrough(t, deadline, always)
	if !isNotLeader(err) || time.Since(began) < deadline {
		t.Fatalf("err = %v after %s, want the last NOT_LEADER at the deadline", err, time.Since(began))
	}
}

// Any other answer of a node is the call's, at once: a call that reached a
// node may have been applied, so it is never sent to another.
func TestNodesReturnAnswersAtOnce(t *testing.T) {
	t.Parallel()
	for _, answer := range []error{
		status.Error(codes.Unavailable, "leadership changed while committing; the outcome is unknown"),
		status.Error(codes.InvalidArgument, "bad"),
		status.Error(codes.NotFound, "no such job"),
	} {
		s, addr := serveGet(t, answers(answer))
		next, nextAddr := serveGet(t, answers(nil))
		_, err := getThrough(t, 5*time.Second, addr, nextAddr)
		if status.Code(err) != status.Code(answer) || status.Convert(err).Message() != status.Convert(answer).Message() {
			t.Fatalf("err = %v, want %v", err, answer)
		}
		if s.calls.Load() != 1 || next.calls.Load() != 0 {
			t.Fatalf("%v: %d calls to the node, %d to the next; want 1 and 0", answer, s.calls.Load(), next.calls.Load())
		}
	}
}

// --addr takes host:port or a list of them, and names a bad item.
func TestParseAddrs(t *testing.T) {
	t.Parallel()
	got, err := ParseAddrs("127.0.0.1:7001, node2.internal:7001,[::1]:7003")
	if err != nil || strings.Join(got, " ") != "127.0.0.1:7001 node2.internal:7001 [::1]:7003" {
		t.Fatalf("ParseAddrs = %q, %v", got, err)
	}
	for in, want := range map[string]string{
		"":                             "--addr: required",
		"127.0.0.1":                    `--addr: "127.0.0.1" is not host:port`,
		"127.0.0.1:7001,,127.0.0.1:2":  `--addr: "" is not host:port`,
		"127.0.0.1:7001;127.0.0.1:702": `--addr: "127.0.0.1:7001;127.0.0.1:702" is not host:port`,
		":7001":                        `--addr: ":7001" is not host:port`,
	} {
		if _, err := ParseAddrs(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseAddrs(%q) = %v, want %q...", in, err, want)
		}
	}
}

// The CLI takes a list from --addr and RAFTCRON_ADDR alike.
func TestCLIAddrList(t *testing.T) {
	down := closedPort(t)
	_, up := serveGet(t, answers(nil))
	if code, out, stderr := runInProcess(t, "job", "get", "x", "--addr", down+","+up); code != ExitOK || !strings.Contains(out, "@hourly") {
		t.Fatalf("job get --addr %s,%s: exit %d, %q %q", down, up, code, out, stderr)
	}
	t.Setenv("RAFTCRON_ADDR", down+" , "+up)
	if code, _, stderr := runInProcess(t, "job", "get", "x"); code != ExitOK {
		t.Fatalf("job get with RAFTCRON_ADDR=%q: exit %d, %q", down+" , "+up, code, stderr)
	}
	code, _, stderr := runInProcess(t, "job", "get", "x", "--addr", "127.0.0.1:7001:7002")
	if code != ExitFailure || !strings.Contains(stderr, `--addr: "127.0.0.1:7001:7002" is not host:port`) {
		t.Fatalf("a malformed --addr: exit %d, %q", code, stderr)
	}
}

// A list of addresses is exported as a shell reads it back, unquoted;
// anything else a shell would read otherwise is quoted.
func TestTargetExports(t *testing.T) {
	t.Parallel()
	got := Target{Addr: "127.0.0.1:7001,127.0.0.1:7002", Auth: Auth{Token: "a b'c"}}.Exports()
	want := []string{"export RAFTCRON_ADDR=127.0.0.1:7001,127.0.0.1:7002", `export RAFTCRON_TOKEN='a b'\''c'`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Exports() = %q, want %q", got, want)
	}
}
