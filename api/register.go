package api

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// RegisterOption adds a service to Register.
type RegisterOption func(*registration)

type registration struct {
	runs     pb.RunServiceServer
	fence    pb.FenceServiceServer
	snapshot pb.SnapshotServiceServer
	audit    pb.AuditServiceServer
	acl      pb.AclServiceServer
	workers  pb.WorkerServiceServer
}

// WithRunService also serves RunService.
func WithRunService(runs pb.RunServiceServer) RegisterOption {
	return func(r *registration) { r.runs = runs }
}

// WithAuditService also serves AuditService.
func WithAuditService(audit pb.AuditServiceServer) RegisterOption {
	return func(r *registration) { r.audit = audit }
}

// WithFenceService also serves FenceService.
func WithFenceService(fence pb.FenceServiceServer) RegisterOption {
	return func(r *registration) { r.fence = fence }
}

// WithSnapshotService also serves SnapshotService.
func WithSnapshotService(snapshot pb.SnapshotServiceServer) RegisterOption {
	return func(r *registration) { r.snapshot = snapshot }
}

// WithACLService also serves AclService.
func WithACLService(acl pb.AclServiceServer) RegisterOption {
	return func(r *registration) { r.acl = acl }
}

// WithWorkerService also serves WorkerService.
func WithWorkerService(workers pb.WorkerServiceServer) RegisterOption {
	return func(r *registration) { r.workers = workers }
}

// Register puts the services on s, together with the standard health
// service (reporting SERVING for the server as a whole and for each
// service) and server reflection, so that grpcurl and gRPC health probes
// work. Call Shutdown on the returned health server when draining, so that
// probes see NOT_SERVING before connections close.
func Register(s *grpc.Server, jobs pb.JobServiceServer, cl pb.ClusterServiceServer, opts ...RegisterOption) *health.Server {
	var r registration
	for _, o := range opts {
		o(&r)
	}
	pb.RegisterJobServiceServer(s, jobs)
	pb.RegisterClusterServiceServer(s, cl)
	names := []string{"", pb.JobService_ServiceDesc.ServiceName, pb.ClusterService_ServiceDesc.ServiceName}
	if r.runs != nil {
		pb.RegisterRunServiceServer(s, r.runs)
		names = append(names, pb.RunService_ServiceDesc.ServiceName)
	}
	if r.audit != nil {
		pb.RegisterAuditServiceServer(s, r.audit)
		names = append(names, pb.AuditService_ServiceDesc.ServiceName)
	}
	if r.fence != nil {
		pb.RegisterFenceServiceServer(s, r.fence)
		names = append(names, pb.FenceService_ServiceDesc.ServiceName)
	}
	if r.snapshot != nil {
		pb.RegisterSnapshotServiceServer(s, r.snapshot)
		names = append(names, pb.SnapshotService_ServiceDesc.ServiceName)
	}
	if r.acl != nil {
		pb.RegisterAclServiceServer(s, r.acl)
		names = append(names, pb.AclService_ServiceDesc.ServiceName)
	}
	if r.workers != nil {
		pb.RegisterWorkerServiceServer(s, r.workers)
		names = append(names, pb.WorkerService_ServiceDesc.ServiceName)
	}
	h := health.NewServer()
	for _, name := range names {
		h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(s, h)
	reflection.Register(s)
	return h
}
