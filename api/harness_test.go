package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/internal/syncbuf"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// testNow is the clock of every test server: validation and command stamps
// use it, so expectations are exact.
var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// harness is a real gRPC server over an in-memory listener, serving the
// services on top of fakes.
type harness struct {
	store   *fakeStore
	cluster *fakeCluster
	hub     *RunHub
	health  *health.Server
	server  *grpc.Server
	conn    *grpc.ClientConn
	jobs    pb.JobServiceClient
	admin   pb.ClusterServiceClient
	runs    pb.RunServiceClient
	fence   pb.FenceServiceClient
	audit   pb.AuditServiceClient
	logs    *syncbuf.Buffer
}

func newHarness(t *testing.T) *harness {
	return newHarnessWith(t, nil)
}

// newHarnessWith lets a test replace the JobService (to make it panic).
func newHarnessWith(t *testing.T, jobs func(*fakeStore) pb.JobServiceServer) *harness {
	return startHarness(t, jobs, nil, nil)
}

// newHarnessConfig builds the JobService from a config that configure
// completes (a Triggerer, Leadership).
func newHarnessConfig(t *testing.T, configure func(*Deps)) *harness {
	return startHarness(t, nil, configure, nil)
}

// newHarnessHub serves RunService over hub.
func newHarnessHub(t *testing.T, hub *RunHub) *harness {
	return startHarness(t, nil, nil, hub)
}

func startHarness(t *testing.T, jobs func(*fakeStore) pb.JobServiceServer, configure func(*Deps), hub *RunHub) *harness {
	t.Helper()
	if hub == nil {
		hub = NewRunHub()
	}
	h := &harness{
		store:   newFakeStore(),
		cluster: &fakeCluster{},
		hub:     hub,
		logs:    &syncbuf.Buffer{},
	}
	log := slog.New(slog.NewTextHandler(h.logs, nil))
	h.server = grpc.NewServer(
		grpc.ChainUnaryInterceptor(RecoveryInterceptor(log)),
		grpc.ChainStreamInterceptor(RecoveryStreamInterceptor(log)),
	)
	d := Deps{
		Store: h.store, Registry: h.store, Ledger: h.store, AuditLog: h.store,
		Hub: h.hub, Now: func() time.Time { return testNow },
	}
	if configure != nil {
		configure(&d)
	}
	svc := Services{
		Jobs: NewJobService(d), Runs: NewRunService(d),
		// No Store: the fake store cannot commit membership records.
		Cluster: NewClusterService(Deps{Cluster: h.cluster, Registry: h.store}),
		Fence:   NewFenceService(d), Audit: NewAuditService(d),
	}
	if jobs != nil {
		svc.Jobs = jobs(h.store)
	}
	h.health = Register(h.server, svc)

	lis := bufconn.Listen(1 << 20)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = h.server.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		h.server.Stop()
		<-served
	})
	h.conn = conn
	h.jobs = pb.NewJobServiceClient(conn)
	h.admin = pb.NewClusterServiceClient(conn)
	h.runs = pb.NewRunServiceClient(conn)
	h.fence = pb.NewFenceServiceClient(conn)
	h.audit = pb.NewAuditServiceClient(conn)
	return h
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// validSpec passes jobspec.Validate at testNow.
func validSpec(name string) *pb.JobSpec {
	return &pb.JobSpec{
		Name:     name,
		Schedule: "0 2 * * *",
		Http:     &pb.HttpTarget{Url: "http://billing.internal/run"},
	}
}

// wantCode fails unless err is a gRPC status with code c; it returns the
// status for further checks.
func wantCode(t *testing.T, err error, c codes.Code) *status.Status {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", c)
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != c {
		t.Fatalf("got %v, want code %v", err, c)
	}
	return st
}

// badRequestFields lists the fields of the BadRequest detail of st.
func badRequestFields(t *testing.T, st *status.Status) []string {
	t.Helper()
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetDescription() == "" {
					t.Errorf("violation of %q has no description", v.GetField())
				}
				fields = append(fields, v.GetField())
			}
		}
	}
	if fields == nil {
		t.Fatalf("status %v carries no BadRequest detail", st)
	}
	return fields
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei
		}
	}
	return nil
}

var errBoom = errors.New("boom")

func tsOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

func durOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
