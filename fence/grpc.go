package fence

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// metadataSignature is HeaderSignature as a gRPC metadata key.
var metadataSignature = strings.ToLower(HeaderSignature)

// UnaryServerInterceptor fences unary gRPC methods the way Middleware fences HTTP
// handlers, reading the run from the incoming metadata (the lowercase header names):
//
//   - with WithKeys, signature missing or not made with the keys: Unauthenticated; a
//     genuine one for a job WithJobs leaves out: PermissionDenied; handler not called,
//     nothing recorded. The signature is the run-only form an exec run or worker attempt
//     gets (ExecDispatch with no payload), forwarded by the program that calls the
//     service, or v1 with WithV1Signatures;
//   - metadata missing or malformed: InvalidArgument, handler not called, nothing recorded;
//   - stale token: FailedPrecondition naming both tokens, handler not called;
//   - idempotency key already recorded: AlreadyExists "duplicate idempotency key", handler
//     not called; the caller should treat it as success (the effect was applied before);
//   - otherwise the handler runs with the Run in its context, and the key is recorded only
//     if it returned no error.
//
// Every method is fenced unless WithMethods narrows it.
func UnaryServerInterceptor(f *Fence, opts ...Option) grpc.UnaryServerInterceptor {
	o := newOptions(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !o.fenced(info.FullMethod) {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		signatures := md.Get(metadataSignature)
		if o.requiresSignature(signatures) {
			return nil, status.Error(codes.Unauthenticated, ErrUnsigned.Error())
		}
		run, err := FromMetadata(md)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if err := o.authenticate(ExecDispatch(run, nil), signatures); err != nil {
			if errors.Is(err, ErrNotAccepted) {
				return nil, status.Error(codes.PermissionDenied, err.Error())
			}
			return nil, status.Error(codes.Unauthenticated, err.Error())
		}
		var resp any
		var herr error
		called := false
		err = f.Do(ctx, run, o.scope(run), func(ctx context.Context) error {
			called = true
			resp, herr = handler(ctx, req)
			return herr
		})
		if called && herr != nil {
			return resp, herr // the handler's own answer, untouched
		}
		return grpcResult(o, run, resp, err)
	}
}

func grpcResult(o options, run Run, resp any, err error) (any, error) {
	var stale *StaleError
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, ErrUnrecorded):
		// The effect happened: reporting failure would invite a retry that repeats it.
		o.logger.Error("fence: effect applied but its idempotency key was not recorded; "+
			"a re-delivery will apply it again", "job", run.Job, "token", run.Token,
			"idempotency_key", run.IdempotencyKey, "error", err)
		return resp, nil
	case errors.Is(err, ErrDuplicate):
		return nil, status.Error(codes.AlreadyExists, "duplicate idempotency key")
	case errors.As(err, &stale):
		return nil, status.Error(codes.FailedPrecondition, stale.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, status.FromContextError(err).Err()
	}
	o.logger.Error("fence: cannot check the run", "job", run.Job, "token", run.Token, "error", err)
	return nil, status.Error(codes.Internal, err.Error())
}
