package devcluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cli"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// electingJobs answers the first ApplyJob as a node does when leadership
// moved while the job was committing: the outcome is unknown, and the job
// was committed or not (committed).
type electingJobs struct {
	pb.UnimplementedJobServiceServer
	committed bool

	mu      sync.Mutex // guards the fields below
	applies int
	stored  *pb.JobSpec
}

func (s *electingJobs) ApplyJob(_ context.Context, req *pb.ApplyJobRequest) (*pb.ApplyJobResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applies++
	if s.applies == 1 {
		if s.committed {
			s.stored = req.GetSpec()
		}
		return nil, status.Error(codes.Unavailable, "leadership changed while committing; the outcome is unknown "+
			"(the change may still be applied): read the current state before retrying")
	}
	s.stored = req.GetSpec()
	return &pb.ApplyJobResponse{Job: &pb.Job{Spec: s.stored, Version: 1}, Changed: true, Created: true}, nil
}

func (s *electingJobs) GetJob(_ context.Context, req *pb.GetJobRequest) (*pb.GetJobResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil || s.stored.GetName() != req.GetName() {
		return nil, status.Errorf(codes.NotFound, "job %q not found", req.GetName())
	}
	return &pb.GetJobResponse{Job: &pb.Job{Spec: s.stored, Version: 1}}, nil
}

// An election while the demo job commits, likely with dev's short Raft
// timings on a busy laptop, leaves its outcome unknown: dev reads the job
// back, applies it again only if it is not there, and starts either way.
func TestDemoJobOutcomeUnknownIsReadBack(t *testing.T) {
	spec := &pb.JobSpec{Name: devJobName, Schedule: "*/2 * * * * *", Http: &pb.HttpTarget{Url: "http://127.0.0.1:1/demo"}}
	for _, tc := range []struct {
		name        string
		committed   bool
		wantApplies int
	}{
		{"committed", true, 1},
		{"not committed", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := &electingJobs{committed: tc.committed}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer()
			pb.RegisterJobServiceServer(srv, jobs)
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(srv.Stop)

			job, err := applyDemoJob(t.Context(), cli.Target{Addr: ln.Addr().String(), Timeout: 10 * time.Second}, spec)
			if err != nil {
				t.Fatalf("applyDemoJob: %v", err)
			}
			if !proto.Equal(job.GetSpec(), spec) {
				t.Errorf("job %v, want the demo job", job)
			}
			jobs.mu.Lock()
			defer jobs.mu.Unlock()
			if jobs.applies != tc.wantApplies {
				t.Errorf("%d ApplyJob calls, want %d", jobs.applies, tc.wantApplies)
			}
		})
	}
}
