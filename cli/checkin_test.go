package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/api"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fakeCheckins answers CheckinJob as a node would, after refusing the
// first calls as unavailable.
type fakeCheckins struct {
	pb.UnimplementedJobServiceServer
	mu      sync.Mutex
	reqs    []*pb.CheckinJobRequest
	refuse  int
	envSeen string
}

func (f *fakeCheckins) CheckinJob(_ context.Context, req *pb.CheckinJobRequest) (*pb.CheckinJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, proto.CloneOf(req))
	if f.refuse > 0 {
		f.refuse--
		return nil, status.Error(codes.Unavailable, "connection reset")
	}
	st := map[string]pb.RunState{"start": pb.RunState_RUN_STATE_DISPATCHED, "success": pb.RunState_RUN_STATE_SUCCEEDED,
		"fail": pb.RunState_RUN_STATE_FAILED}[req.GetStatus()]
	id := req.GetRunId()
	if id == "" {
		id = fmt.Sprintf("%s-%d", req.GetName(), 40+len(f.reqs))
	}
	return &pb.CheckinJobResponse{Run: &pb.Run{
		Id: id, Job: req.GetName(), SlotUnix: 1_800_000_000, Kind: pb.FireKind_FIRE_KIND_CHECKIN, State: st,
		Attempts: []*pb.Attempt{{Number: 1, Token: 42, Kind: pb.FireKind_FIRE_KIND_CHECKIN, State: st}},
	}}, nil
}

func (f *fakeCheckins) seen() []*pb.CheckinJobRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs
}

func serveCheckins(t *testing.T, f *fakeCheckins) string {
	t.Helper()
	return serveFake(t, func(s *grpc.Server) { pb.RegisterJobServiceServer(s, f) })
}

// TestCheckinWrapsACommand: start, the command with its run's variables
// and its output passed through, then fail with its status and the
// output's tail, naming the run; the exit status is the command's.
func TestCheckinWrapsACommand(t *testing.T) {
	f := &fakeCheckins{}
	addr := serveCheckins(t, f)
	code, stdout, stderr := runInProcess(t, "checkin", "nightly", "--addr", addr, "--",
		"/bin/sh", "-c", `echo "run $RAFTCRON_RUN_ID token $RAFTCRON_FENCING_TOKEN"; echo oops >&2; exit 3`)
	if code != 3 || stdout != "run nightly-41 token 42\n" || stderr != "oops\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 3, the command's own output", code, stdout, stderr)
	}
	reqs := f.seen()
	if len(reqs) != 2 || reqs[0].GetStatus() != "start" {
		t.Fatalf("pings %v, want start then the end", reqs)
	}
	end := reqs[1]
	if end.GetStatus() != "fail" || end.ExitCode == nil || end.GetExitCode() != 3 || end.GetRunId() != "nightly-41" ||
		!strings.Contains(end.GetOutput(), "run nightly-41") || !strings.Contains(end.GetOutput(), "oops") ||
		end.GetRequestId() == "" || end.GetRequestId() == reqs[0].GetRequestId() {
		t.Fatalf("end ping %v, want fail, exit code 3, the run of the start, the output, a request id of its own", end)
	}
	if code, _, _ := runInProcess(t, "checkin", "nightly", "--addr", addr, "--", "/bin/true"); code != 0 {
		t.Fatalf("checkin -- true: exit %d", code)
	}
	if end := f.seen()[3]; end.GetStatus() != "success" || end.GetExitCode() != 0 {
		t.Fatalf("end ping %v, want success with exit code 0", end)
	}
}

// TestCheckinRunsTheCommandWhileTheClusterIsDown: every ping fails within
// --timeout, the command still runs and its status is the exit status;
// stderr says each ping was lost.
func TestCheckinRunsTheCommandWhileTheClusterIsDown(t *testing.T) {
	down := closedPort(t)
	code, stdout, stderr := runInProcess(t, "checkin", "nightly", "--addr", down, "--timeout", "500ms", "--",
		"/bin/sh", "-c", "echo ran; exit 4")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 4 || stdout != "ran\n" || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "raftcron: the start of job nightly not checked in: cannot reach raftcron") ||
		!strings.Contains(lines[0], "running /bin/sh -c") ||
		!strings.HasPrefix(lines[1], "raftcron: the fail of job nightly not checked in") ||
		!strings.Contains(lines[1], "exiting with the command's status, 4") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestCheckinRetriesWithinTheTimeout: a ping refused as unavailable is
// sent again, with the same request id, until a node takes it.
func TestCheckinRetriesWithinTheTimeout(t *testing.T) {
	f := &fakeCheckins{refuse: 2}
	addr := serveCheckins(t, f)
	code, stdout, stderr := runInProcess(t, "checkin", "nightly", "--status", "fail", "--exit-code", "2", "--addr", addr)
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "job nightly checked in: run nightly-43, token 42, failed, slot ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	reqs := f.seen()
	if len(reqs) != 3 || reqs[0].GetRequestId() != reqs[2].GetRequestId() || reqs[2].GetExitCode() != 2 {
		t.Fatalf("pings %v, want three with one request id and exit code 2", reqs)
	}
}

// TestCheckinCommandThatDoesNotStart: exit 127 as a shell says, one line
// on stderr, and a fail ping with that status.
func TestCheckinCommandThatDoesNotStart(t *testing.T) {
	f := &fakeCheckins{}
	addr := serveCheckins(t, f)
	code, _, stderr := runInProcess(t, "checkin", "nightly", "--addr", addr, "--", "/nonexistent/backup")
	if code != 127 || !strings.HasPrefix(stderr, "raftcron: /nonexistent/backup: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 127 and one line", code, stderr)
	}
	if end := f.seen()[1]; end.GetStatus() != "fail" || end.GetExitCode() != 127 {
		t.Fatalf("end ping %v", end)
	}
}

func TestCheckinUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"checkin"},
		{"checkin", "a", "b"},
		{"checkin", "a", "--status", "start", "--", "/bin/true"},
		{"checkin", "a", "--exit-code", "1", "--", "/bin/true"},
		{"checkin", "a", "b", "--", "/bin/true"},
		{"checkin", "a", "--"},
	} {
		if code, _, stderr := runInProcess(t, args...); code != ExitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

func TestTailBufferKeepsTheLastBytes(t *testing.T) {
	t.Parallel()
	tb := &tailBuffer{max: api.MaxCheckinOutput}
	for i := range 3000 {
		fmt.Fprintf(tb, "%d\n", i)
	}
	got := tb.String()
	if len(got) != api.MaxCheckinOutput || !strings.HasSuffix(got, "2998\n2999\n") {
		t.Fatalf("kept %d bytes ending %q", len(got), got[len(got)-10:])
	}
	// A cut inside a rune, or invalid bytes, read as one replacement each.
	for max, want := range map[int]string{3: "é\uFFFD", 2: "\uFFFD"} {
		tb = &tailBuffer{max: max}
		_, _ = tb.Write([]byte("abé\xff"))
		if got := tb.String(); got != want {
			t.Fatalf("last %d bytes read as %q, want %q", max, got, want)
		}
	}
}

// TestTargetColumnOfCheckinJobs: job list says a check-in job is pinged,
// and with what grace.
func TestTargetColumnOfCheckinJobs(t *testing.T) {
	t.Parallel()
	spec := &pb.JobSpec{Checkin: &pb.CheckinTarget{}, Expect: &pb.Expect{StartWithin: durationpb.New(2 * time.Minute)}}
	if got := target(spec); got != "checkin within 2m0s" {
		t.Fatalf("target %q", got)
	}
}
