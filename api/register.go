package api

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Register puts the services on s, together with the standard health
// service (reporting SERVING for the server as a whole and for each
// service) and server reflection, so that grpcurl and gRPC health probes
// work. Call Shutdown on the returned health server when draining, so that
// probes see NOT_SERVING before connections close.
func Register(s *grpc.Server, jobs pb.JobServiceServer, cl pb.ClusterServiceServer) *health.Server {
	pb.RegisterJobServiceServer(s, jobs)
	pb.RegisterClusterServiceServer(s, cl)
	h := health.NewServer()
	for _, name := range []string{"", pb.JobService_ServiceDesc.ServiceName, pb.ClusterService_ServiceDesc.ServiceName} {
		h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(s, h)
	reflection.Register(s)
	return h
}
