package api

import (
	"context"
	"crypto/sha256"
	"strings"
	"time"

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
	// Now is the clock a token's expiry is judged by: this node's, at each
	// call and for each stream (docs/acl.md, "Expiry"). Nil: time.Now.
	Now func() time.Time
}

// Authorizer is the gRPC interceptor pair that authenticates each call
// and checks it against the method table; the services then scope it to
// the principal's selector.
type Authorizer struct {
	cfg AuthConfig
	// streams are the open streams by token, ended when it is revoked.
	streams *openStreams
}

// NewAuthorizer returns the interceptors of c. Make it the observer of the
// FSM that c.Tokens reads (fsm.TokenObserver), so that deleting a token
// ends the streams it opened.
func NewAuthorizer(c AuthConfig) *Authorizer {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Authorizer{cfg: c, streams: newOpenStreams(c.Tokens, c.Now)}
}

// Unary is the unary interceptor. A call of longCalls is registered under
// its token as a stream is (see Stream).
func (a *Authorizer) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := a.authorize(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if !longCalls[info.FullMethod] {
			return handler(ctx, req)
		}
		ctx, closed := a.streams.open(ctx, PrincipalFrom(ctx))
		defer closed()
		resp, err := handler(ctx, req)
		if revoked := revocation(ctx); err != nil && revoked != nil {
			return nil, revoked
		}
		return resp, err
	}
}

// Stream is the stream interceptor. A token is checked once, when the
// stream opens; the stream stays registered under it, and ends with
// Unauthenticated when the token is deleted or expires.
func (a *Authorizer) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := a.authorize(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		ctx, closed := a.streams.open(ctx, PrincipalFrom(ctx))
		defer closed()
		err = handler(srv, principalStream{ServerStream: ss, ctx: ctx})
		if revoked := revocation(ctx); revoked != nil {
			return revoked
		}
		return err
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
			"this node requires an ACL token: pass --token-file or --token, or set RAFTCRON_TOKEN_FILE or RAFTCRON_TOKEN "+
				"(metadata authorization: Bearer <secret>)")
	}
	t, err := a.lookup(ctx, secret)
	if err != nil {
		return Principal{}, err
	}
	return Principal{
		Name: t.GetName(), Role: t.GetRole(), Selector: t.GetSelector(), Accessor: t.GetAccessorId(),
		Pools: t.GetPools(), MaxConcurrency: t.GetMaxConcurrency(),
		secretHash: hashSecret(secret), expiresAt: expiry(t),
	}, nil
}

// expiry is when t stops working; zero if never.
func expiry(t *pb.AclToken) time.Time {
	if t.GetExpiresAt() == nil {
		return time.Time{}
	}
	return t.GetExpiresAt().AsTime()
}

// live reports whether t is known and unexpired by this node's clock: an
// expired token is as unknown as a deleted one.
func (a *Authorizer) live(t *pb.AclToken) bool {
	e := expiry(t)
	return e.IsZero() || a.cfg.Now().Before(e)
}

// errUnknownToken answers a token that is deleted, expired or never was
// alike.
var errUnknownToken = status.Error(codes.Unauthenticated, "unknown or expired ACL token")

// lookup finds the live token of secret, reading the leader's latest state
// once before it calls it unknown. An expired token needs no second look:
// a newer state cannot revive it.
func (a *Authorizer) lookup(ctx context.Context, secret string) (*pb.AclToken, error) {
	sum := hashSecret(secret)
	t, ok := a.cfg.Tokens.ACLToken(sum)
	if !ok && a.cfg.Barrier != nil {
		if err := a.cfg.Barrier.ReadBarrier(ctx); err != nil {
			return nil, statusOf(err)
		}
		t, ok = a.cfg.Tokens.ACLToken(sum)
	}
	if !ok || !a.live(t) {
		return nil, errUnknownToken
	}
	return t, nil
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
