package api

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// WhoAmI names the holder of the token whose secret is bearer ("" for
// none) and its role, as the interceptors would judge a call carrying it:
// Unauthenticated for a missing or unknown token when ACLs are on; with
// them off, role management. The web UI asks it to hide what the role
// cannot do.
func (a *Authorizer) WhoAmI(ctx context.Context, bearer string) (name, role string, err error) {
	md := metadata.MD{}
	if bearer != "" {
		md.Set(AuthorizationKey, "Bearer "+bearer)
	}
	p, err := a.principal(metadata.NewIncomingContext(ctx, md), PermRead)
	if err != nil {
		return "", "", err
	}
	return p.Name, RoleName(p.Role), nil
}
