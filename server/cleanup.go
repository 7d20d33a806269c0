package server

import "context"

// cleanup is a stack of releases, run newest first: each part New builds
// pushes its own release as soon as it exists, so a failure at any step
// releases exactly what was taken before it.
type cleanup []func(context.Context)

func (c *cleanup) push(release func(context.Context)) { *c = append(*c, release) }

// run releases everything pushed, newest first, once.
func (c *cleanup) run(ctx context.Context) {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i](ctx)
	}
	*c = nil
}
