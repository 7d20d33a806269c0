package fence

import (
	"errors"
	"log/slog"
	"net/http"
)

// Option configures Middleware and UnaryServerInterceptor.
type Option func(*options)

type options struct {
	scope      func(Run) string
	logger     *slog.Logger
	fenced     func(fullMethod string) bool
	requestURL func(*http.Request) string
	verifier   Verifier // keys == nil: signatures are not checked
}

func newOptions(opts []Option) options {
	o := options{
		scope:      func(r Run) string { return r.Job },
		fenced:     func(string) bool { return true },
		requestURL: ReceivedURL,
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
// high-water mark. Only v2 signatures are accepted unless WithV1Signatures says
// otherwise. A nil keys turns verification off (the default).
func WithKeys(keys *Keys) Option {
	return func(o *options) { o.verifier.keys = keys }
}

// WithV1Signatures also accepts v1 signatures, which cover the run but not the method,
// URL or body: for the upgrade from nodes that sign v1 only. Remove it once every node
// signs v2.
func WithV1Signatures() Option {
	return func(o *options) { o.verifier.v1 = true }
}

// WithJobs accepts only runs of the named jobs; a genuine dispatch of another job is
// refused with ErrNotAccepted (HTTP 403, gRPC PermissionDenied) before its token
// reaches the Guard. Give it to a service that shares the key with jobs not meant for it.
func WithJobs(names ...string) Option {
	return func(o *options) { o.verifier.jobs = append(o.verifier.jobs, names...) }
}

// WithURLPrefix accepts only HTTP dispatches whose URL (see ReceivedURL) starts with
// prefix, e.g. "https://billing.example/hooks/": a request signed for another service,
// or sent with another Host header, is refused with ErrNotAccepted (HTTP 403). End the
// prefix with "/" unless the prefix is a whole URL. The gRPC interceptor and exec runs
// have no URL and ignore it.
func WithURLPrefix(prefix string) Option {
	return func(o *options) { o.verifier.urlPrefix = prefix }
}

// WithRequestURL says how Middleware computes the URL a request was sent to, when a
// proxy in front of the service terminates TLS or rewrites the path (default
// ReceivedURL). It must return the URL the raftcron nodes sent the request to.
func WithRequestURL(url func(*http.Request) string) Option {
	return func(o *options) {
		if url != nil {
			o.requestURL = url
		}
	}
}

// authenticate checks the signature values of a dispatch when WithKeys asked for it,
// and applies WithJobs and WithURLPrefix either way.
func (o options) authenticate(d Dispatch, signatures []string) error {
	if o.verifier.keys == nil {
		return o.verifier.accepts(d)
	}
	err := o.verifier.verifyValues(d, signatures)
	if errors.Is(err, ErrBadSignature) || errors.Is(err, ErrNotAccepted) {
		o.logger.Warn("fence: refused a signed run", "job", d.Run.Job, "token", d.Run.Token,
			"run_id", d.Run.RunID, "url", d.URL, "error", err)
	}
	return err
}

// requiresSignature reports whether a request without any signature is refused before
// its run is even parsed.
func (o options) requiresSignature(signatures []string) bool {
	return o.verifier.keys != nil && len(signatures) == 0
}
