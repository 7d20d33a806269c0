package fence

import (
	"errors"
	"log/slog"
)

// Option configures Middleware and UnaryServerInterceptor.
type Option func(*options)

type options struct {
	scope  func(Run) string
	logger *slog.Logger
	fenced func(fullMethod string) bool
	keys   *Keys
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

// WithKeys makes Middleware and UnaryServerInterceptor require a valid
// X-Raftcron-Signature made with one of keys (see Keys) before the run's token reaches
// the Guard: an unsigned or forged request is refused (HTTP 401, gRPC Unauthenticated)
// and changes nothing, so that only the raftcron nodes holding the key can raise a
// high-water mark. A nil keys turns verification off (the default).
func WithKeys(keys *Keys) Option {
	return func(o *options) { o.keys = keys }
}

// authenticate checks the signature values of a request when WithKeys asked for it.
func (o options) authenticate(run Run, signatures []string) error {
	if o.keys == nil {
		return nil
	}
	err := o.keys.verifyValues(run, signatures)
	if errors.Is(err, ErrBadSignature) {
		o.logger.Warn("fence: refused a run with a bad signature", "job", run.Job, "token", run.Token,
			"run_id", run.RunID, "error", err)
	}
	return err
}

// requiresSignature reports whether a request without any signature is refused before
// its run is even parsed.
func (o options) requiresSignature(signatures []string) bool {
	return o.keys != nil && len(signatures) == 0
}
