package fence

import "log/slog"

// Option configures Middleware and UnaryServerInterceptor.
type Option func(*options)

type options struct {
	scope  func(Run) string
	logger *slog.Logger
	fenced func(fullMethod string) bool
}

func newOptions(opts []Option) options {
	o := options{
		scope:  func(r Run) string { return r.Job },
		fenced: func(string) bool { return true },
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}

// WithScope derives the fencing scope from the run (default: the job name). Use it when
// several jobs write the same resource (one scope for all of them) or one job writes
// independent ones (see docs/fencing.md). A nil function keeps the default; an empty
// result means the job name.
func WithScope(scope func(Run) string) Option {
	return func(o *options) {
		if scope != nil {
			o.scope = scope
		}
	}
}

// WithLogger sets where the middleware reports what it cannot put in the response: above
// all an effect applied whose key could not be recorded (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithMethods makes UnaryServerInterceptor fence only the methods for which fenced
// returns true (default: every method); the others pass through untouched. Use it to
// leave health checks and reflection alone. Middleware ignores it: wrap only the handlers
// that need fencing.
func WithMethods(fenced func(fullMethod string) bool) Option {
	return func(o *options) {
		if fenced != nil {
			o.fenced = fenced
		}
	}
}
