package api

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// oneToken is a token table holding one token.
type oneToken struct {
	secret string
	token  *pb.AclToken
}

func (o oneToken) ACLToken(sum []byte) (*pb.AclToken, bool) {
	if bytes.Equal(sum, hashSecret(o.secret)) {
		return o.token, true
	}
	return nil, false
}

func TestWhoAmI(t *testing.T) {
	tokens := oneToken{"viewer-secret", &pb.AclToken{Name: "viewer", Role: pb.AclRole_ACL_ROLE_READ}}
	on := NewAuthorizer(AuthConfig{Enabled: true, Tokens: tokens})
	off := NewAuthorizer(AuthConfig{Enabled: false, Tokens: tokens})
	for _, tc := range []struct {
		name       string
		auth       *Authorizer
		bearer     string
		who, role  string
		refusedFor codes.Code
	}{
		{"ACLs on, no token", on, "", "", "", codes.Unauthenticated},
		{"ACLs on, unknown token", on, "nope", "", "", codes.Unauthenticated},
		{"ACLs on, read token", on, "viewer-secret", "viewer", "read", codes.OK},
		{"ACLs off, no token", off, "", Anonymous, "management", codes.OK},
		{"ACLs off, a known token names the caller", off, "viewer-secret", "viewer", "management", codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			who, role, err := tc.auth.WhoAmI(context.Background(), tc.bearer)
			if status.Code(err) != tc.refusedFor || who != tc.who || role != tc.role {
				t.Errorf("WhoAmI(%q) = %q, %q, %v; want %q, %q, code %v", tc.bearer, who, role, err, tc.who, tc.role, tc.refusedFor)
			}
		})
	}
}
