package fence

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// grpcTarget serves the standard health service behind the fence interceptor, over an
// in-memory connection; calls counts the requests that reached the service.
type grpcTarget struct {
	fence  *Fence
	client healthpb.HealthClient
	calls  atomic.Int32
	runs   atomic.Pointer[Run]
}

func newGRPCTarget(t *testing.T, opts ...Option) *grpcTarget {
	t.Helper()
	gt := &grpcTarget{fence: NewFence(NewMemoryGuard(), NewMemoryDedupe(100))}
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	reached := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		gt.calls.Add(1)
		if run, ok := RunFromContext(ctx); ok {
			gt.runs.Store(&run)
		}
		return h(ctx, req)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(UnaryServerInterceptor(gt.fence, opts...), reached))
	hs := health.NewServer()
	hs.SetServingStatus("billing", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)

	lis := bufconn.Listen(1 << 20)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	gt.client = healthpb.NewHealthClient(conn)
	return gt
}

func (gt *grpcTarget) check(md metadata.MD, service string) (codes.Code, string) {
	ctx := metadata.NewOutgoingContext(context.Background(), md)
	_, err := gt.client.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	s := status.Convert(err)
	return s.Code(), s.Message()
}

func mdFor(token uint64, key string) metadata.MD { return runWith(token, key).Metadata() }

func TestInterceptorRefusesBadMetadata(t *testing.T) {
	gt := newGRPCTarget(t)
	garbled := mdFor(5, "k")
	garbled.Set("x-raftcron-fencing-token", "five")
	zero := mdFor(5, "k")
	zero.Set("x-raftcron-fencing-token", "0")
	for name, c := range map[string]struct {
		md   metadata.MD
		want string
	}{
		"missing": {metadata.MD{}, "x-raftcron-fencing-token: missing"},
		"garbled": {garbled, "x-raftcron-fencing-token: not an unsigned integer"},
		"zero":    {zero, "x-raftcron-fencing-token: token 0 is never issued"},
	} {
		code, msg := gt.check(c.md, "billing")
		if code != codes.InvalidArgument || !strings.HasPrefix(msg, c.want) {
			t.Fatalf("%s: %v %q, want InvalidArgument %q", name, code, msg, c.want)
		}
	}
	if n := gt.calls.Load(); n != 0 {
		t.Fatalf("service reached %d times by bad requests", n)
	}
	if h, _ := gt.fence.Guard.Highest(context.Background(), "nightly-billing"); h != 0 {
		t.Fatalf("a bad request admitted a token: Highest = %d", h)
	}
}

func TestInterceptorFencesAndDeduplicates(t *testing.T) {
	gt := newGRPCTarget(t)
	if code, msg := gt.check(mdFor(42, "k42"), "billing"); code != codes.OK {
		t.Fatalf("token 42: %v %q", code, msg)
	}
	if r := gt.runs.Load(); r == nil || r.Token != 42 {
		t.Fatalf("service saw run %+v, want token 42 in its context", r)
	}
	code, msg := gt.check(mdFor(41, "k41"), "billing")
	if code != codes.FailedPrecondition || !strings.Contains(msg, "41") || !strings.Contains(msg, "42") {
		t.Fatalf("token 41 after 42: %v %q, want FailedPrecondition naming both tokens", code, msg)
	}
	code, msg = gt.check(mdFor(43, "k42"), "billing")
	if code != codes.AlreadyExists || msg != "duplicate idempotency key" {
		t.Fatalf("repeated key: %v %q, want AlreadyExists", code, msg)
	}
	if n := gt.calls.Load(); n != 1 {
		t.Fatalf("service reached %d times, want 1", n)
	}
}

func TestInterceptorDoesNotRecordFailedHandler(t *testing.T) {
	gt := newGRPCTarget(t)
	// The health service answers NotFound for a service it does not know.
	if code, _ := gt.check(mdFor(42, "k"), "unknown"); code != codes.NotFound {
		t.Fatalf("code = %v, want the handler's own NotFound", code)
	}
	if seen, _ := gt.fence.Dedupe.Seen(context.Background(), "k"); seen {
		t.Fatal("the key of a failed call was recorded")
	}
	if code, msg := gt.check(mdFor(42, "k"), "billing"); code != codes.OK {
		t.Fatalf("retry: %v %q", code, msg)
	}
	if n := gt.calls.Load(); n != 2 {
		t.Fatalf("service reached %d times, want 2", n)
	}
}

func TestInterceptorWithMethodsLeavesOthersAlone(t *testing.T) {
	gt := newGRPCTarget(t, WithMethods(func(m string) bool { return !strings.HasPrefix(m, "/grpc.health.v1.") }))
	if code, msg := gt.check(metadata.MD{}, "billing"); code != codes.OK {
		t.Fatalf("unfenced method without metadata: %v %q", code, msg)
	}
}
