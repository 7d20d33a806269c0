package fence

import "context"

type runKey struct{}

// NewContext returns ctx carrying run; the middleware and interceptor use it to hand the
// parsed run to the handler.
func NewContext(ctx context.Context, run Run) context.Context {
	return context.WithValue(ctx, runKey{}, run)
}

// RunFromContext returns the run that a Fence admitted for this request, if any.
func RunFromContext(ctx context.Context) (Run, bool) {
	r, ok := ctx.Value(runKey{}).(Run)
	return r, ok
}
