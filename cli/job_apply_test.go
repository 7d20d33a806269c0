package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// applyServer is a JobService that applies every spec and records the
// calls; fail names jobs whose spec fails with AlreadyExists, noBatch
// makes ApplyJobs Unimplemented (an older server).
type applyServer struct {
	pb.UnimplementedJobServiceServer
	fail    map[string]bool
	noBatch bool

	mu      sync.Mutex // guards the fields below
	batches []int      // the size of each ApplyJobs call
	singles int
}

func (s *applyServer) ApplyJobs(_ context.Context, req *pb.ApplyJobsRequest) (*pb.ApplyJobsResponse, error) {
	if s.noBatch {
		return nil, status.Error(codes.Unimplemented, "unknown method ApplyJobs")
	}
	s.mu.Lock()
	s.batches = append(s.batches, len(req.GetSpecs()))
	s.mu.Unlock()
	out := make([]*pb.ApplyJobsResult, len(req.GetSpecs()))
	for i, spec := range req.GetSpecs() {
		if s.fail[spec.GetName()] {
			out[i] = &pb.ApplyJobsResult{Code: int32(codes.AlreadyExists), Message: fmt.Sprintf("job %q: taken", spec.GetName())}
			continue
		}
		out[i] = &pb.ApplyJobsResult{Job: &pb.Job{Spec: spec, Version: 1}, Created: true, Changed: true}
	}
	return &pb.ApplyJobsResponse{Results: out}, nil
}

func (s *applyServer) ApplyJob(_ context.Context, req *pb.ApplyJobRequest) (*pb.ApplyJobResponse, error) {
	s.mu.Lock()
	s.singles++
	s.mu.Unlock()
	return &pb.ApplyJobResponse{Job: &pb.Job{Spec: req.GetSpec(), Version: 1}, Created: true, Changed: true}, nil
}

func (s *applyServer) calls() (batches []int, singles int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...), s.singles
}

func serveApply(t *testing.T, s *applyServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterJobServiceServer(gs, s)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

// jobList is a job file of n HTTP jobs named job-0000...
func jobList(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "- name: job-%04d\n  schedule: \"0 2 * * *\"\n  http: {url: \"http://h.internal/run\"}\n", i)
	}
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func createdLines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "job job-%04d created (version 1)\n", i)
	}
	return b.String()
}

func TestApplyFileSendsBatches(t *testing.T) {
	t.Parallel()
	s := &applyServer{}
	addr := serveApply(t, s)
	code, out, errOut := runInProcess(t, "job", "apply", "-f", jobList(t, 2500), "--addr", addr)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if out != createdLines(0, 2500) {
		t.Errorf("stdout is not one created line per job in file order:\n%.300s...", out)
	}
	batches, singles := s.calls()
	if fmt.Sprint(batches) != "[1000 1000 500]" || singles != 0 {
		t.Errorf("ApplyJobs calls of %v and %d ApplyJob calls, want [1000 1000 500] and none", batches, singles)
	}
}

func TestApplyFileStopsAfterTheBatchThatFailed(t *testing.T) {
	t.Parallel()
	s := &applyServer{fail: map[string]bool{"job-1200": true, "job-1300": true}}
	addr := serveApply(t, s)
	code, out, errOut := runInProcess(t, "job", "apply", "-f", jobList(t, 2500), "--addr", addr)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d", code, ExitFailure)
	}
	want := createdLines(0, 1200) + createdLines(1201, 1300) + createdLines(1301, 2000)
	if out != want {
		t.Errorf("stdout does not list exactly the jobs applied (%d lines, want %d)", strings.Count(out, "\n"), strings.Count(want, "\n"))
	}
	if !strings.Contains(errOut, `job "job-1200" already exists`) || !strings.Contains(errOut, "1 more") {
		t.Errorf("stderr %q should name the first failed job and count the other", errOut)
	}
	if batches, _ := s.calls(); fmt.Sprint(batches) != "[1000 1000]" {
		t.Errorf("ApplyJobs calls of %v, want [1000 1000]: nothing after the failed call", batches)
	}
}

func TestApplyFileFallsBackWithoutApplyJobs(t *testing.T) {
	t.Parallel()
	s := &applyServer{noBatch: true}
	addr := serveApply(t, s)
	code, out, errOut := runInProcess(t, "job", "apply", "-f", jobList(t, 3), "--addr", addr)
	if code != ExitOK || errOut != "" || out != createdLines(0, 3) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, singles := s.calls(); singles != 3 {
		t.Errorf("%d ApplyJob calls, want 3", singles)
	}
}
