package api

import (
	"context"
	"crypto/sha256"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// AuthorizationKey is the metadata key of the token: "Bearer <secret>".
const AuthorizationKey = "authorization"

// TokenStore finds an ACL token by the SHA-256 of its secret (the FSM).
type TokenStore interface {
	ACLToken(secretHash []byte) (*pb.AclToken, bool)
}

// AuthConfig is what an Authorizer is built from.
type AuthConfig struct {
	// Enabled requires a known token on every call the method table does
	// not make public (serve --acl). Off, every call acts with every right,
	// for the principal its token or client certificate names.
	Enabled bool
	// Tokens is this node's replicated token table; required.
	Tokens TokenStore
	// Barrier lets a follower catch up once before it calls a token
	// unknown: a token created a moment ago may not have reached it yet.
	// Nil: no second look.
	Barrier Barrier
}

// Authorizer is the gRPC interceptor pair that authenticates each call
// and checks it against the method table; the services then scope it to
// the principal's selector.
type Authorizer struct {
	cfg AuthConfig
}

// NewAuthorizer returns the interceptors of c.
func NewAuthorizer(c AuthConfig) *Authorizer {
	return &Authorizer{cfg: c}
}

// Unary is the unary interceptor.
func (a *Authorizer) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := a.authorize(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream is the stream interceptor.
func (a *Authorizer) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := a.authorize(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, principalStream{ServerStream: ss, ctx: ctx})
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s principalStream) Context() context.Context { return s.ctx }

// authorize returns ctx carrying the call's principal, or the status that
// refuses the call.
func (a *Authorizer) authorize(ctx context.Context, method string) (context.Context, error) {
	perm, ok := methodPermissions[method]
	if !ok {
		// Deny by default: a method added without a rule is refused, and
		// a test fails.
		return nil, status.Errorf(codes.PermissionDenied, "%s has no ACL rule", method)
	}
	if perm == PermPublic || perm == PermNode {
		return ctx, nil
	}
	p, err := a.principal(ctx, perm)
	if err != nil {
		return nil, err
	}
	if !p.may(perm) {
		return nil, status.Errorf(codes.PermissionDenied, "ACL token %q has role %s: %s needs %s",
			p.Name, RoleName(p.Role), method, perm)
	}
	return withPrincipal(ctx, p), nil
}

// principal authenticates the call. With ACLs off nothing is refused: a
// known token or a client certificate only names the principal.
func (a *Authorizer) principal(ctx context.Context, perm Permission) (Principal, error) {
	secret, given, err := bearer(ctx)
	if !a.cfg.Enabled {
		p := Principal{Name: peerName(ctx), Role: pb.AclRole_ACL_ROLE_MANAGEMENT}
		if err == nil && given {
			if t, ok := a.cfg.Tokens.ACLToken(hashSecret(secret)); ok {
				p.Name = t.GetName()
			}
		}
		return p, nil
	}
	switch {
	case err != nil:
		return Principal{}, err
	case !given && perm == PermBootstrap:
		return Principal{Name: peerName(ctx)}, nil
	case !given:
		return Principal{}, status.Error(codes.Unauthenticated,
			"this node requires an ACL token: pass --token or set RAFTCRON_TOKEN (metadata authorization: Bearer <secret>)")
	}
	t, err := a.lookup(ctx, secret)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Name: t.GetName(), Role: t.GetRole(), Selector: t.GetSelector()}, nil
}

// lookup finds the token of secret, reading the leader's latest state once
// before it gives up.
func (a *Authorizer) lookup(ctx context.Context, secret string) (*pb.AclToken, error) {
	sum := hashSecret(secret)
	if t, ok := a.cfg.Tokens.ACLToken(sum); ok {
		return t, nil
	}
	if a.cfg.Barrier != nil {
		if err := a.cfg.Barrier.ReadBarrier(ctx); err != nil {
			return nil, statusOf(err)
		}
		if t, ok := a.cfg.Tokens.ACLToken(sum); ok {
			return t, nil
		}
	}
	return nil, status.Error(codes.Unauthenticated, "unknown ACL token")
}

// bearer reads the secret of the authorization metadata; given is false
// when the call carries none.
func bearer(ctx context.Context) (secret string, given bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(AuthorizationKey)
	if len(vals) == 0 {
		return "", false, nil
	}
	scheme, secret, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return "", true, status.Error(codes.Unauthenticated, "authorization: want \"Bearer <secret>\"")
	}
	return secret, true, nil
}

func hashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}
