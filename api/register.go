package api

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Services are the public API's services, as Register serves them; a nil
// one is not served.
type Services struct {
	Jobs     pb.JobServiceServer
	Cluster  pb.ClusterServiceServer
	Runs     pb.RunServiceServer
	Fence    pb.FenceServiceServer
	Snapshot pb.SnapshotServiceServer
	Audit    pb.AuditServiceServer
	ACL      pb.AclServiceServer
	Workers  pb.WorkerServiceServer
	Secrets  pb.SecretServiceServer
	Calendar pb.CalendarServiceServer
	Freeze   pb.FreezeServiceServer
	Channels pb.ChannelServiceServer
	Alerts   pb.AlertServiceServer
	Chains   pb.ChainServiceServer
}

// NewServices builds every service from d.
func NewServices(d Deps) Services {
	return Services{
		Jobs:     NewJobService(d),
		Cluster:  NewClusterService(d),
		Runs:     NewRunService(d),
		Fence:    NewFenceService(d),
		Snapshot: NewSnapshotService(d),
		Audit:    NewAuditService(d),
		ACL:      NewACLService(d),
		Workers:  NewWorkerService(d),
		Secrets:  NewSecretService(d),
		Calendar: NewCalendarService(d),
		Freeze:   NewFreezeService(d),
		Channels: NewChannelService(d),
		Alerts:   NewAlertService(d),
		Chains:   NewChainService(d),
	}
}

// Register puts the services on s, together with the standard health
// service (reporting SERVING for the server as a whole and for each
// service) and server reflection, so that grpcurl and gRPC health probes
// work. Call Shutdown on the returned health server when draining, so that
// probes see NOT_SERVING before connections close.
func Register(s *grpc.Server, svc Services) *health.Server {
	names := []string{""}
	names = serve(s, names, &pb.JobService_ServiceDesc, pb.RegisterJobServiceServer, svc.Jobs)
	names = serve(s, names, &pb.ClusterService_ServiceDesc, pb.RegisterClusterServiceServer, svc.Cluster)
	names = serve(s, names, &pb.RunService_ServiceDesc, pb.RegisterRunServiceServer, svc.Runs)
	names = serve(s, names, &pb.AuditService_ServiceDesc, pb.RegisterAuditServiceServer, svc.Audit)
	names = serve(s, names, &pb.FenceService_ServiceDesc, pb.RegisterFenceServiceServer, svc.Fence)
	names = serve(s, names, &pb.SnapshotService_ServiceDesc, pb.RegisterSnapshotServiceServer, svc.Snapshot)
	names = serve(s, names, &pb.AclService_ServiceDesc, pb.RegisterAclServiceServer, svc.ACL)
	names = serve(s, names, &pb.WorkerService_ServiceDesc, pb.RegisterWorkerServiceServer, svc.Workers)
	names = serve(s, names, &pb.ChainService_ServiceDesc, pb.RegisterChainServiceServer, svc.Chains)
	names = serve(s, names, &pb.SecretService_ServiceDesc, pb.RegisterSecretServiceServer, svc.Secrets)
	names = serve(s, names, &pb.CalendarService_ServiceDesc, pb.RegisterCalendarServiceServer, svc.Calendar)
	names = serve(s, names, &pb.FreezeService_ServiceDesc, pb.RegisterFreezeServiceServer, svc.Freeze)
	names = serve(s, names, &pb.ChannelService_ServiceDesc, pb.RegisterChannelServiceServer, svc.Channels)
	names = serve(s, names, &pb.AlertService_ServiceDesc, pb.RegisterAlertServiceServer, svc.Alerts)
	h := health.NewServer()
	for _, name := range names {
		h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(s, h)
	reflection.Register(s)
	return h
}

// serve registers impl unless it is nil, and adds its name to names.
func serve[T any](s *grpc.Server, names []string, desc *grpc.ServiceDesc, register func(grpc.ServiceRegistrar, T), impl T) []string {
	if any(impl) == nil {
		return names
	}
	register(s, impl)
	return append(names, desc.ServiceName)
}
