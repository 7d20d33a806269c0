package cli

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// pagingServer answers ListJobs as a node whose bounded scan found nothing
// in the first part of the registry: an empty page with a token, then the
// job.
type pagingServer struct {
	pb.UnimplementedJobServiceServer
}

func (pagingServer) ListJobs(_ context.Context, req *pb.ListJobsRequest) (*pb.ListJobsResponse, error) {
	if req.GetPageToken() == "" {
		return &pb.ListJobsResponse{NextPageToken: "c2Nhbm5lZA"}, nil
	}
	return &pb.ListJobsResponse{Jobs: []*pb.Job{{Spec: &pb.JobSpec{Name: "late-match", Schedule: "@hourly"}, Version: 1}}}, nil
}

// job list pages on through a short or empty page that carries a token.
func TestJobListPagesThroughEmptyPages(t *testing.T) {
	addr := serveFake(t, func(gs *grpc.Server) { pb.RegisterJobServiceServer(gs, pagingServer{}) })
	res := runCLI(t, "", "job", "list", "--addr", addr, "--label", "team=x", "-o", "json")
	if res.Code != 0 || !strings.Contains(res.Stdout, "late-match") {
		t.Fatalf("job list: %v, want the job of the second page", res)
	}
}

// runPagingServer answers ListRuns as a node whose bounded scan found
// nothing in scope among the newest runs, then a run of a deleted job.
type runPagingServer struct {
	pb.UnimplementedRunServiceServer
}

func (runPagingServer) ListRuns(_ context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	if req.GetPageToken() == "" {
		return &pb.ListRunsResponse{NextPageToken: "c2Nhbm5lZA"}, nil
	}
	return &pb.ListRunsResponse{Runs: []*pb.Run{{Id: "late-1", Job: "late", JobDeleted: true}}}, nil
}

// run list pages on through an empty page that carries a token, and marks
// a deleted job's run.
func TestRunListPagesThroughEmptyPages(t *testing.T) {
	addr := serveFake(t, func(gs *grpc.Server) { pb.RegisterRunServiceServer(gs, runPagingServer{}) })
	res := runCLI(t, "", "run", "list", "--addr", addr)
	if res.Code != 0 || !strings.Contains(res.Stdout, "late (deleted)") {
		t.Fatalf("run list: %v, want the run of the second page, its job marked deleted", res)
	}
}

// serveFake serves the services register puts on a gRPC server, on
// loopback, until the test ends, and returns its address.
func serveFake(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	register(gs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}
