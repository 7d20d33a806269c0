package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestEveryMethodHasAnACLRule walks every service this binary links in —
// ours, health and reflection — so that an RPC added later without a rule
// fails here instead of being refused in production (or, worse, slipping
// through).
func TestEveryMethodHasAnACLRule(t *testing.T) {
	served := map[string]bool{}
	for _, pkg := range []protoreflect.FullName{"raftcron.v1", "grpc.health.v1", "grpc.reflection.v1", "grpc.reflection.v1alpha"} {
		n := 0
		protoregistry.GlobalFiles.RangeFilesByPackage(pkg, func(fd protoreflect.FileDescriptor) bool {
			for i := 0; i < fd.Services().Len(); i++ {
				sd := fd.Services().Get(i)
				for j := 0; j < sd.Methods().Len(); j++ {
					method := "/" + string(sd.FullName()) + "/" + string(sd.Methods().Get(j).Name())
					served[method] = true
					n++
					if _, ok := methodPermissions[method]; !ok {
						t.Errorf("%s has no ACL rule in methodPermissions", method)
					}
				}
			}
			return true
		})
		if n == 0 {
			t.Errorf("package %s has no methods: the walk found nothing to check", pkg)
		}
	}
	for method := range methodPermissions {
		if !served[method] {
			t.Errorf("methodPermissions has a rule for %s, which no service has", method)
		}
	}

	// And what a server registers is what the walk saw.
	s := grpc.NewServer()
	state := fsm.New()
	Register(s, NewServices(Deps{
		Store: &fsmStore{f: state}, Registry: state, Ledger: state, Tokens: state, AuditLog: state,
		Cluster: &fakeCluster{}, Workers: fakeWorkerHub{}, Leader: &fakeLeaderInfo{},
	}))
	pb.RegisterInternalServiceServer(s, pb.UnimplementedInternalServiceServer{})
	for svc, info := range s.GetServiceInfo() {
		for _, m := range info.Methods {
			if _, ok := methodPermissions["/"+svc+"/"+m.Name]; !ok {
				t.Errorf("registered /%s/%s has no ACL rule", svc, m.Name)
			}
		}
	}
}

func TestACLRefusals(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	write := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)

	t.Run("no token", func(t *testing.T) {
		_, err := h.jobs.ListJobs(ctx, &pb.ListJobsRequest{})
		st := wantCode(t, err, codes.Unauthenticated)
		if !strings.Contains(st.Message(), "RAFTCRON_TOKEN") {
			t.Fatalf("message %q does not say how to pass a token", st.Message())
		}
		_, err = h.admin.GetStatus(ctx, &pb.GetStatusRequest{})
		wantCode(t, err, codes.Unauthenticated)
	})
	t.Run("not a bearer token", func(t *testing.T) {
		md := metadata.AppendToOutgoingContext(ctx, AuthorizationKey, "Basic "+read)
		_, err := h.jobs.ListJobs(md, &pb.ListJobsRequest{})
		wantCode(t, err, codes.Unauthenticated)
	})
	t.Run("unknown token", func(t *testing.T) {
		before := h.store.barrierCount()
		_, err := h.jobs.ListJobs(with(ctx, "not-a-token"), &pb.ListJobsRequest{})
		st := wantCode(t, err, codes.Unauthenticated)
		if st.Message() != "unknown or expired ACL token" {
			t.Fatalf("message %q", st.Message())
		}
		if n := h.store.barrierCount() - before; n != 1 {
			t.Fatalf("an unknown token cost %d read barriers, want exactly one second look", n)
		}
	})
	t.Run("read token writing", func(t *testing.T) {
		if _, err := h.jobs.ListJobs(with(ctx, read), &pb.ListJobsRequest{}); err != nil {
			t.Fatalf("read token listing: %v", err)
		}
		_, err := h.jobs.CreateJob(with(ctx, read), &pb.CreateJobRequest{Spec: validSpec("billing")})
		st := wantCode(t, err, codes.PermissionDenied)
		if !strings.Contains(st.Message(), `"viewer"`) || !strings.Contains(st.Message(), "role write") {
			t.Fatalf("message %q should name the token and the role needed", st.Message())
		}
		if _, err := h.store.f.Job("billing"); err == nil {
			t.Fatal("the refused create happened")
		}
	})
	t.Run("write token managing", func(t *testing.T) {
		if _, err := h.jobs.CreateJob(with(ctx, write), &pb.CreateJobRequest{Spec: validSpec("billing")}); err != nil {
			t.Fatalf("write token creating a job: %v", err)
		}
		_, err := h.admin.RemoveNode(with(ctx, write), &pb.RemoveNodeRequest{Id: "n2"})
		wantCode(t, err, codes.PermissionDenied)
		_, err = h.acl.CreateAclToken(with(ctx, write), &pb.CreateAclTokenRequest{Name: "mine", Role: pb.AclRole_ACL_ROLE_MANAGEMENT})
		wantCode(t, err, codes.PermissionDenied)
		_, err = h.acl.ListAclTokens(with(ctx, write), &pb.ListAclTokensRequest{})
		wantCode(t, err, codes.PermissionDenied)
		wantCode(t, h.saveSnapshot(with(ctx, write)), codes.PermissionDenied)
	})
	t.Run("worker token reading", func(t *testing.T) {
		_, err := h.jobs.GetJob(with(ctx, worker), &pb.GetJobRequest{Name: "billing"})
		wantCode(t, err, codes.PermissionDenied)
	})
	t.Run("connecting a worker", func(t *testing.T) {
		connect := func(ctx context.Context) error {
			stream, err := h.worker.Connect(ctx)
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}
		wantCode(t, connect(ctx), codes.Unauthenticated)
		for _, tok := range []string{read, write} {
			st := wantCode(t, connect(with(ctx, tok)), codes.PermissionDenied)
			if !strings.Contains(st.Message(), "role worker") {
				t.Fatalf("message %q should name the role needed", st.Message())
			}
		}
		for _, tok := range []string{worker, mgmt} {
			if err := connect(with(ctx, tok)); status.Code(err) != status.Code(errWorkerServed) {
				t.Fatalf("connect: %v, want the call let through to the worker hub", err)
			}
		}
	})
	t.Run("health without token", func(t *testing.T) {
		resp, err := h.health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health check without a token: %v, %v", resp, err)
		}
	})
	t.Run("reflection needs a token", func(t *testing.T) {
		services := func(ctx context.Context) error {
			stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
			if err != nil {
				return err
			}
			// A stream the server has ended fails Send with io.EOF; its
			// status comes from Recv.
			if err := stream.Send(&reflectionpb.ServerReflectionRequest{
				MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
			}); err != nil && err != io.EOF {
				return err
			}
			_, err = stream.Recv()
			return err
		}
		wantCode(t, services(ctx), codes.Unauthenticated)
		if err := services(with(ctx, worker)); err != nil {
			t.Fatalf("reflection with a token: %v", err)
		}
	})
	t.Run("management does everything", func(t *testing.T) {
		if _, err := h.admin.RemoveNode(with(ctx, mgmt), &pb.RemoveNodeRequest{Id: "n2"}); err != nil {
			t.Fatalf("management removing a node: %v", err)
		}
		if _, err := h.jobs.DeleteJob(with(ctx, mgmt), &pb.DeleteJobRequest{Name: "billing"}); err != nil {
			t.Fatalf("management deleting a job: %v", err)
		}
		if err := h.saveSnapshot(with(ctx, mgmt)); err != nil {
			t.Fatalf("management saving a snapshot: %v", err)
		}
	})
	t.Run("deleted token", func(t *testing.T) {
		tokens, err := h.acl.ListAclTokens(with(ctx, mgmt), &pb.ListAclTokensRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range tokens.GetTokens() {
			if tok.GetName() == "viewer" {
				if _, err := h.acl.DeleteAclToken(with(ctx, mgmt), &pb.DeleteAclTokenRequest{AccessorId: tok.GetAccessorId()}); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, err = h.jobs.ListJobs(with(ctx, read), &pb.ListJobsRequest{})
		wantCode(t, err, codes.Unauthenticated)
	})
}

// TestTokenNotYetAppliedIsFoundAfterOneBarrier: a follower that has not
// applied a fresh token yet catches up once and then accepts it.
func TestTokenNotYetAppliedIsFoundAfterOneBarrier(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	secret := "fresh-secret"
	h.store.onBarrier = func() {
		h.store.onBarrier = nil
		res, _ := h.store.Apply(ctx, &pb.Command{ProposedAtUnixNano: testNow.UnixNano(), Kind: &pb.Command_CreateAclToken{
			CreateAclToken: &pb.CreateAclTokenCommand{Token: &pb.AclToken{
				AccessorId: "a1", Name: "late", Role: pb.AclRole_ACL_ROLE_READ, SecretHash: hashSecret(secret),
			}},
		}})
		if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Errorf("create token: %v", res)
		}
	}
	if _, err := h.jobs.ListJobs(with(ctx, secret), &pb.ListJobsRequest{Stale: true}); err != nil {
		t.Fatalf("a token that arrives with the barrier was refused: %v", err)
	}
	if n := h.store.barrierCount(); n != 1 {
		t.Fatalf("%d barriers, want 1", n)
	}
}

func TestWritesRecordThePrincipal(t *testing.T) {
	t.Run("ACLs on", func(t *testing.T) {
		h := newACLHarness(t, true)
		ctx := testCtx(t)
		write := h.token(t, h.bootstrap(t), "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
		resp, err := h.jobs.CreateJob(with(ctx, write), &pb.CreateJobRequest{Spec: validSpec("billing")})
		if err != nil || resp.GetJob().GetUpdatedBy() != "deployer" {
			t.Fatalf("CreateJob: updated_by %q, %v; want deployer", resp.GetJob().GetUpdatedBy(), err)
		}
		batch, err := h.jobs.ApplyJobs(with(ctx, write), &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{validSpec("reports")}})
		if err != nil || batch.GetResults()[0].GetJob().GetUpdatedBy() != "deployer" {
			t.Fatalf("ApplyJobs: %v, %v; want updated_by deployer", batch, err)
		}
	})
	t.Run("ACLs off", func(t *testing.T) {
		h := newACLHarness(t, false)
		ctx := testCtx(t)
		resp, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("billing")})
		if err != nil || resp.GetJob().GetUpdatedBy() != Anonymous {
			t.Fatalf("CreateJob without a token: updated_by %q, %v; want %q", resp.GetJob().GetUpdatedBy(), err, Anonymous)
		}
		// A known token still names the writer; an unknown one is ignored.
		secret := h.bootstrap(t)
		resp2, err := h.jobs.PauseJob(with(ctx, secret), &pb.PauseJobRequest{Name: "billing"})
		if err != nil || resp2.GetJob().GetUpdatedBy() != BootstrapTokenName {
			t.Fatalf("PauseJob with a token: updated_by %q, %v; want %q", resp2.GetJob().GetUpdatedBy(), err, BootstrapTokenName)
		}
		if _, err := h.jobs.ResumeJob(with(ctx, "unknown"), &pb.ResumeJobRequest{Name: "billing"}); err != nil {
			t.Fatalf("ACLs off refused an unknown token: %v", err)
		}
	})
}

// tlsPeer is ctx as a server sees a call over TLS with a verified client
// certificate.
func tlsPeer(ctx context.Context, cn string, dnsNames ...string) context.Context {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, DNSNames: dnsNames}
	return peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{
		State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}},
	}})
}

func TestPeerNameComesFromAVerifiedCertificate(t *testing.T) {
	ctx := context.Background()
	vouched := metadata.NewIncomingContext(ctx, metadata.Pairs(forwardedPrincipalKey, "alice"))
	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no TLS", ctx, Anonymous},
		{"unverified TLS", peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{}}), Anonymous},
		{"client certificate", tlsPeer(ctx, "ci-robot"), "ci-robot"},
		{"client certificate vouching", tlsPeer(vouched, "ci-robot"), "ci-robot"},
		{"node forwarding a call", tlsPeer(vouched, "n2", nodeCertificateName), "alice"},
		{"vouching without TLS", vouched, Anonymous},
	}
	for _, tc := range cases {
		if got := peerName(tc.ctx); got != tc.want {
			t.Errorf("%s: peerName = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestForwardIdentityCarriesTheTokenAndPrincipal(t *testing.T) {
	in := metadata.NewIncomingContext(context.Background(), metadata.Pairs(AuthorizationKey, "Bearer s3cret"))
	in = withPrincipal(in, Principal{Name: "deployer"})
	md, _ := metadata.FromOutgoingContext(forwardIdentity(in))
	want := map[string]string{AuthorizationKey: "Bearer s3cret", forwardedPrincipalKey: "deployer", ForwardedKey: "1"}
	for k, v := range want {
		if got := md.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("forwarded metadata %s = %v, want %q", k, got, v)
		}
	}
}
