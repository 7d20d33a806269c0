package server

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/proto/codec"
)

// keepaliveMinTime is the most frequent client ping the server tolerates.
// gRPC's default (5 minutes) makes clients with keepalive fail with
// GOAWAY too_many_pings.
const keepaliveMinTime = 10 * time.Second

// Flow-control windows of every connection and stream. Fixed windows turn
// off gRPC's bandwidth-delay estimation, which otherwise pings the client
// after almost every request on a connection that carries one call at a
// time (two extra frames and four syscalls per call, on both sides). 1 MiB
// lets a full ApplyJobs batch arrive without waiting for a window update.
const (
	grpcStreamWindow = 1 << 20
	grpcConnWindow   = 1 << 20
)

// grpcStreamWorkers is how many goroutines serve calls; a call beyond them
// gets its own goroutine, as without workers. Reused goroutines keep the
// stack they grew, instead of growing a fresh one for every call. Writes
// wait for Raft, so a worker is busy for a commit (milliseconds): one per
// expected concurrent call, not one per core.
const grpcStreamWorkers = 128

// newGRPCServer builds the node's gRPC server behind auth; extra are the
// port's own options (cluster.Mux.GRPCServerOptions: the TLS handshake's
// result).
func newGRPCServer(log *slog.Logger, maxStreams uint32, auth *api.Authorizer, extra ...grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxConcurrentStreams(maxStreams),
		grpc.ChainUnaryInterceptor(api.RecoveryInterceptor(log), auth.Unary()),
		grpc.ChainStreamInterceptor(api.RecoveryStreamInterceptor(log), auth.Stream()),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
		grpc.NumStreamWorkers(grpcStreamWorkers),
		grpc.StaticStreamWindowSize(grpcStreamWindow),
		grpc.StaticConnWindowSize(grpcConnWindow),
		grpc.ForceServerCodecV2(codec.Server),
	}, extra...)...)
}

// drainGRPC lets in-flight calls finish, up to d or until done is closed,
// then cuts the rest.
func drainGRPC(gs *grpc.Server, d time.Duration, done <-chan struct{}) {
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		gs.Stop()
		<-stopped
	case <-done:
		gs.Stop()
		<-stopped
	}
}
