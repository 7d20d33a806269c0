package api

import (
	"context"
	"crypto/x509"
	"slices"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Anonymous is the principal of a call that no token or client
// certificate names, which only ACLs off let through.
const Anonymous = "anonymous"

// nodeCertificateName is the DNS SAN of node certificates (DESIGN §11).
// Only a node may tell who a forwarded call acts for.
const nodeCertificateName = "server.raftcron"

// forwardedPrincipalKey carries, on a call a follower forwards to the
// leader, the principal the follower authenticated when no token names it
// (a client certificate with ACLs off). The leader believes it only from a
// peer with a node certificate.
const forwardedPrincipalKey = "raftcron-principal"

// Principal is who a call acts for.
type Principal struct {
	// Name is the token's name, the client certificate's common name, or
	// Anonymous; writes record it as the job's updated_by.
	Name string
	// Role bounds the methods the call may reach; with ACLs off it is
	// management.
	Role pb.AclRole
	// Selector scopes the call to the jobs whose labels include it; empty
	// means every job.
	Selector map[string]string
	// Accessor is the accessor ID of the call's token; empty without one.
	Accessor string
	// Pools and MaxConcurrency are a worker token's bindings (AclToken).
	Pools          []string
	MaxConcurrency uint32

	// secretHash and expiresAt are the token's, for the streams it opens
	// (openStreams); nil and zero without a token that ACLs check.
	secretHash []byte
	expiresAt  time.Time
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the principal the Authorizer put in ctx. A call that
// did not pass through it (a service used directly, as in tests) acts for
// Anonymous, unscoped.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return Principal{Name: Anonymous, Role: pb.AclRole_ACL_ROLE_MANAGEMENT}
}

// sees reports whether a job with these labels is in the principal's scope.
func (p Principal) sees(labels map[string]string) bool {
	return fsm.SelectorMatches(labels, p.Selector)
}

// caller is the principal as a command carries it, so that the FSM
// records it and enforces the scope atomically with the write.
func (p Principal) caller() *pb.Caller {
	return &pb.Caller{Principal: p.Name, Selector: p.Selector}
}

// peerName names a call that carries no token: by its verified client
// certificate's common name, or by the principal a forwarding node vouches
// for, or Anonymous.
func peerName(ctx context.Context) string {
	leaf := verifiedPeer(ctx)
	if leaf == nil {
		return Anonymous
	}
	if slices.Contains(leaf.DNSNames, nodeCertificateName) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get(forwardedPrincipalKey); len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	if cn := leaf.Subject.CommonName; cn != "" {
		return cn
	}
	return Anonymous
}

// verifiedPeer is the leaf certificate of the peer's verified chain, or
// nil without TLS or without a verified client certificate.
func verifiedPeer(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}

// forwardIdentity is ctx for a call forwarded to the leader: marked
// forwarded, with the client's token, which the leader checks itself, and
// the principal this node authenticated.
func forwardIdentity(ctx context.Context) context.Context {
	kv := []string{ForwardedKey, "1", forwardedPrincipalKey, PrincipalFrom(ctx).Name}
	md, _ := metadata.FromIncomingContext(ctx)
	if auth := md.Get(AuthorizationKey); len(auth) > 0 {
		kv = append(kv, AuthorizationKey, auth[0])
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// Role names as the CLI and messages spell them.
var roleNames = map[pb.AclRole]string{
	pb.AclRole_ACL_ROLE_MANAGEMENT: "management",
	pb.AclRole_ACL_ROLE_WRITE:      "write",
	pb.AclRole_ACL_ROLE_READ:       "read",
	pb.AclRole_ACL_ROLE_WORKER:     "worker",
	pb.AclRole_ACL_ROLE_CHECKIN:    "checkin",
}

// RoleName is the name of r: management, write, read, worker, checkin,
// or none.
func RoleName(r pb.AclRole) string {
	if n, ok := roleNames[r]; ok {
		return n
	}
	return "none"
}

// ParseRole is the role named s, or false.
func ParseRole(s string) (pb.AclRole, bool) {
	for r, n := range roleNames {
		if n == s {
			return r, true
		}
	}
	return 0, false
}
