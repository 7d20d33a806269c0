// Package principal carries who made a request through its context, from
// the API's authentication to the commands that record it (audit records,
// manual runs). It holds names only, never secrets.
package principal

import "context"

// Anonymous is the principal of a request nothing authenticated: every
// request while ACLs are off.
const Anonymous = "anonymous"

type key struct{}

// With returns ctx carrying name as its principal. An empty name leaves
// the request anonymous.
func With(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, key{}, name)
}

// From is the principal ctx carries, or Anonymous.
func From(ctx context.Context) string {
	if name, ok := ctx.Value(key{}).(string); ok && name != "" {
		return name
	}
	return Anonymous
}
