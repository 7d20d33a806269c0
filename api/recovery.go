package api

import (
	"context"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RecoveryInterceptor turns a panic in a unary handler into Internal, so a
// bad request can never take the node down. The panic value and stack go to
// log (slog.Default() if nil); the client sees no internals.
func RecoveryInterceptor(log *slog.Logger) grpc.UnaryServerInterceptor {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				logPanic(ctx, log, info.FullMethod, r)
				resp, err = nil, status.Error(codes.Internal, "internal error: "+info.FullMethod+" failed unexpectedly")
			}
		}()
		return handler(ctx, req)
	}
}

// RecoveryStreamInterceptor is RecoveryInterceptor for streaming handlers.
func RecoveryStreamInterceptor(log *slog.Logger) grpc.StreamServerInterceptor {
	if log == nil {
		log = slog.Default()
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				logPanic(ss.Context(), log, info.FullMethod, r)
				err = status.Error(codes.Internal, "internal error: "+info.FullMethod+" failed unexpectedly")
			}
		}()
		return handler(srv, ss)
	}
}

func logPanic(ctx context.Context, log *slog.Logger, method string, r any) {
	log.ErrorContext(ctx, "panic in gRPC handler", "method", method, "panic", r, "stack", string(debug.Stack()))
}
