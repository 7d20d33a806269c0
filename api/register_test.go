package api

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/raftcron/raftcron/internal/syncbuf"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestHealthServing(t *testing.T) {
	h := newHarness(t)
	client := healthpb.NewHealthClient(h.conn)
	for _, svc := range []string{"", "raftcron.v1.JobService", "raftcron.v1.ClusterService", "raftcron.v1.RunService", "raftcron.v1.FenceService"} {
		resp, err := client.Check(testCtx(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("Check(%q): %v", svc, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v, want SERVING", svc, resp.GetStatus())
		}
	}
	// Draining flips the answer before connections close.
	h.health.Shutdown()
	resp, err := client.Check(testCtx(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after Shutdown: %v, want NOT_SERVING", resp.GetStatus())
	}
}

func TestReflectionListsServices(t *testing.T) {
	h := newHarness(t)
	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"raftcron.v1.JobService", "raftcron.v1.ClusterService", "raftcron.v1.RunService", "raftcron.v1.FenceService", "grpc.health.v1.Health"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
	_ = stream.CloseSend()
}

func TestRecoveryInterceptorTurnsPanicIntoInternal(t *testing.T) {
	h := newHarnessWith(t, func(s *fakeStore) pb.JobServiceServer {
		return panickyJobs{JobServiceServer: NewJobService(Deps{Store: s, Registry: s})}
	})
	ctx := testCtx(t)
	_, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "a"})
	st := wantCode(t, err, codes.Internal)
	if strings.Contains(st.Message(), "secret") {
		t.Errorf("panic value leaked to the client: %q", st.Message())
	}
	if logs := h.logs.String(); !strings.Contains(logs, "panic") || !strings.Contains(logs, "secret detail") || !strings.Contains(logs, "GetJob") {
		t.Errorf("panic not logged with value and method; log:\n%s", logs)
	}
	// The server survives and keeps serving.
	if _, err := h.jobs.ListJobs(ctx, &pb.ListJobsRequest{}); err != nil {
		t.Errorf("after a panic: %v", err)
	}
}

type panickyJobs struct{ pb.JobServiceServer }

func (panickyJobs) GetJob(context.Context, *pb.GetJobRequest) (*pb.GetJobResponse, error) {
	panic("secret detail")
}

func TestRecoveryStreamInterceptor(t *testing.T) {
	logs := &syncbuf.Buffer{}
	intercept := RecoveryStreamInterceptor(slog.New(slog.NewTextHandler(logs, nil)))
	info := &grpc.StreamServerInfo{FullMethod: "/raftcron.v1.Test/Watch"}
	err := intercept(nil, ctxStream{ctx: context.Background()}, info, func(any, grpc.ServerStream) error { panic("stream boom") })
	wantCode(t, err, codes.Internal)
	if !strings.Contains(logs.String(), "stream boom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

// ctxStream is the part of a server stream the interceptor touches.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }
