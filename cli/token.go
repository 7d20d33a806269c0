package cli

import (
	"context"

	"github.com/raftcron/raftcron/api"
)

// bearerToken sends an ACL token's secret with every call.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{api.AuthorizationKey: "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false so that a token also works on a
// loopback node without TLS; off loopback, serve refuses to run without
// TLS unless told --insecure.
func (bearerToken) RequireTransportSecurity() bool { return false }
