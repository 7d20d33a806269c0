package api

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

func TestBootstrapACLOnce(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	resp, err := h.acl.BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	if err != nil {
		t.Fatalf("BootstrapAcl without a token: %v", err)
	}
	tok := resp.GetToken()
	if tok.GetName() != BootstrapTokenName || tok.GetRole() != pb.AclRole_ACL_ROLE_MANAGEMENT ||
		tok.GetAccessorId() == "" || tok.GetSecretHash() != nil || !tok.GetCreatedAt().AsTime().Equal(testNow) {
		t.Fatalf("bootstrap token %v: want a management token named %q, created now, without hash", tok, BootstrapTokenName)
	}
	if len(resp.GetSecret()) < 43 {
		t.Fatalf("secret %q is shorter than 32 bytes in base64", resp.GetSecret())
	}
	_, err = h.acl.BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "bootstrapped already") {
		t.Fatalf("second bootstrap: %q", st.Message())
	}
	// Even with the management token in hand.
	_, err = h.acl.BootstrapAcl(with(ctx, resp.GetSecret()), &pb.BootstrapAclRequest{})
	wantCode(t, err, codes.FailedPrecondition)
}

func TestCreateAclTokenChecksTheRequest(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := with(testCtx(t), h.bootstrap(t))
	cases := []struct {
		name  string
		req   *pb.CreateAclTokenRequest
		field string
	}{
		{"no name", &pb.CreateAclTokenRequest{Role: pb.AclRole_ACL_ROLE_READ}, "name"},
		{"bad name", &pb.CreateAclTokenRequest{Name: "has space", Role: pb.AclRole_ACL_ROLE_READ}, "name"},
		{"reserved name", &pb.CreateAclTokenRequest{Name: "Anonymous", Role: pb.AclRole_ACL_ROLE_READ}, "name"},
		{"no role", &pb.CreateAclTokenRequest{Name: "ci"}, "role"},
		{"unknown role", &pb.CreateAclTokenRequest{Name: "ci", Role: 42}, "role"},
		{"scoped management", &pb.CreateAclTokenRequest{Name: "ci", Role: pb.AclRole_ACL_ROLE_MANAGEMENT,
			Selector: map[string]string{"team": "a"}}, "selector"},
		{"bad selector key", &pb.CreateAclTokenRequest{Name: "ci", Role: pb.AclRole_ACL_ROLE_READ,
			Selector: map[string]string{"-team": "a"}}, "selector"},
		{"worker without a pool", workerRequest(func(r *pb.CreateAclTokenRequest) { r.Pools = nil }), "pools"},
		{"a pool that is no name", workerRequest(func(r *pb.CreateAclTokenRequest) { r.Pools = []string{"Pay Roll"} }), "pools"},
		{"a pool twice", workerRequest(func(r *pb.CreateAclTokenRequest) { r.Pools = []string{"batch", "batch"} }), "pools"},
		{"a cap above any worker's", workerRequest(func(r *pb.CreateAclTokenRequest) { r.MaxConcurrency = remote.MaxConcurrency + 1 }), "max_concurrency"},
		{"pools on a read token", &pb.CreateAclTokenRequest{Name: "r", Role: pb.AclRole_ACL_ROLE_READ, Pools: []string{"batch"}}, "pools"},
		{"a cap on a management token", &pb.CreateAclTokenRequest{Name: "m", Role: pb.AclRole_ACL_ROLE_MANAGEMENT, MaxConcurrency: 2}, "max_concurrency"},
		{"a ttl under a second", workerRequest(func(r *pb.CreateAclTokenRequest) { r.Ttl = durationpb.New(time.Millisecond) }), "ttl"},
		{"a ttl beyond ten years", workerRequest(func(r *pb.CreateAclTokenRequest) { r.Ttl = durationpb.New(11 * 365 * 24 * time.Hour) }), "ttl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.acl.CreateAclToken(ctx, tc.req)
			st := wantCode(t, err, codes.InvalidArgument)
			if fields := badRequestFields(t, st); len(fields) == 0 || fields[0] != tc.field {
				t.Fatalf("violations on %v, want %s (%s)", fields, tc.field, st.Message())
			}
		})
	}
	if n := len(h.store.f.ACLTokens()); n != 1 {
		t.Fatalf("%d tokens after refused requests, want the bootstrap token only", n)
	}
}

func TestAclTokenLifecycle(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	admin := with(ctx, h.bootstrap(t))
	created, err := h.acl.CreateAclToken(admin, &pb.CreateAclTokenRequest{
		Name: "billing-ci", Role: pb.AclRole_ACL_ROLE_WRITE, Selector: map[string]string{"team": "billing"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetSecret() == "" || created.GetToken().GetSelector()["team"] != "billing" {
		t.Fatalf("CreateAclToken = %v", created)
	}
	_, err = h.acl.CreateAclToken(admin, &pb.CreateAclTokenRequest{Name: "billing-ci", Role: pb.AclRole_ACL_ROLE_READ})
	wantCode(t, err, codes.AlreadyExists)

	list, err := h.acl.ListAclTokens(admin, &pb.ListAclTokensRequest{})
	if err != nil || len(list.GetTokens()) != 2 || list.GetTokens()[0].GetName() != "billing-ci" {
		t.Fatalf("ListAclTokens = %v, %v", list.GetTokens(), err)
	}
	var bootstrapID string
	for _, tok := range list.GetTokens() {
		if tok.GetSecretHash() != nil {
			t.Fatalf("ListAclTokens hands out the hash of %q", tok.GetName())
		}
		if tok.GetName() == BootstrapTokenName {
			bootstrapID = tok.GetAccessorId()
		}
	}

	_, err = h.acl.DeleteAclToken(admin, &pb.DeleteAclTokenRequest{AccessorId: "nosuch"})
	wantCode(t, err, codes.NotFound)
	_, err = h.acl.DeleteAclToken(admin, &pb.DeleteAclTokenRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = h.acl.DeleteAclToken(admin, &pb.DeleteAclTokenRequest{AccessorId: bootstrapID})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "last management token") {
		t.Fatalf("deleting the last management token: %q", st.Message())
	}
	if _, err := h.acl.DeleteAclToken(admin, &pb.DeleteAclTokenRequest{AccessorId: created.GetToken().GetAccessorId()}); err != nil {
		t.Fatalf("DeleteAclToken: %v", err)
	}
	_, err = h.jobs.ListJobs(with(ctx, created.GetSecret()), &pb.ListJobsRequest{})
	wantCode(t, err, codes.Unauthenticated)
}
