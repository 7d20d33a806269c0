package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/policy"

	"github.com/raftcron/raftcron/proto/codec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// HandlerFunc runs one attempt of a job whose worker target names it.
// Returning nil means the attempt succeeded; an error fails it (a
// *fence.StaleError, or one wrapping fence.ErrStale, records it FENCED: a
// newer attempt exists, and it is not retried). ctx is cancelled on the
// job's deadline or target timeout, when the run is cancelled, and when
// the worker loses its lease; the attempt's outcome is reported then,
// without waiting for the handler to return.
type HandlerFunc func(ctx context.Context, run Run) error

// Worker takes attempts from the leader of a raftcron cluster and runs
// them: handlers registered with Handle, and commands its ExecAllow
// permits.
type Worker struct {
	cfg      Config
	allow    *policy.Exec
	user     *proc.User
	log      logger
	handlers map[string]handler // fixed once Run starts: attempts read it without mu
	out      *outbox

	mu      sync.Mutex
	started bool
	conns   map[string]*grpc.ClientConn // by address
}

// New checks cfg and returns a worker; Run starts it.
func New(cfg Config) (*Worker, error) {
	cfg.Tags = cloneMap(cfg.Tags)
	cfg.ExecAllow = append([]string(nil), cfg.ExecAllow...)
	cfg.ExecEnvAllow = append([]string(nil), cfg.ExecEnvAllow...)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	allow, err := newExecPolicy(cfg) // checked above
	if err != nil {
		return nil, err
	}
	u, err := execUser(cfg.ExecUser, allow.Enabled())
	if err != nil {
		return nil, err
	}
	if u != nil && u.UID == 0 {
		cfg.Logger.Warn("commands run as root (ExecUser root): a job's command owns this machine")
	}
	if allow.Enabled() {
		cfg.Logger.Info("commands' leftovers end with them", "exec_containment", proc.Containment())
	}
	return &Worker{
		cfg:      cfg,
		allow:    allow,
		user:     u,
		log:      logger{cfg.Logger},
		handlers: make(map[string]handler),
		out:      newOutbox(),
		conns:    make(map[string]*grpc.ClientConn),
	}, nil
}

// ErrStarted: Handle was called after Run.
var ErrStarted = errors.New("worker: handlers are registered before Run")

// Handle registers h under name ([a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}, as
// jobs' worker.handler spell it), before Run. The leader offers this
// worker only the handler attempts of names it registered.
func (w *Worker) Handle(name string, h HandlerFunc) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.started:
		return ErrStarted
	case !handlerPattern.MatchString(name):
		return &ConfigError{[]Problem{{"handler", fmt.Sprintf("name %q must match [a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}", name)}}}
	case h == nil:
		return &ConfigError{[]Problem{{"handler", fmt.Sprintf("%q is nil", name)}}}
	case w.handlers[name].fn != nil:
		return &ConfigError{[]Problem{{"handler", fmt.Sprintf("%q is registered twice", name)}}}
	}
	w.handlers[name] = handler{fn: h, succeeded: "handler " + name + " succeeded"}
	return nil
}

// handler is a registered HandlerFunc with the detail of its successes,
// made once rather than for every attempt.
type handler struct {
	fn        HandlerFunc
	succeeded string
}

// Run connects to the leader and runs the attempts it offers until ctx
// ends, reconnecting with backoff (and following the leader) whenever the
// stream breaks. It returns nil once ctx ends, or the error that makes
// going on pointless (the cluster refused this worker's identity or
// token). Attempts still running when it returns were cancelled; the
// leader re-dispatches them (at_least_once).
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("worker: Run called twice")
	}
	w.started = true
	w.mu.Unlock()
	defer w.closeConns()

	rc := newReconnect(w.cfg.Addrs, w.cfg.MinBackoff, w.cfg.MaxBackoff)
	for ctx.Err() == nil {
		addr := rc.addr()
		began := time.Now()
		err := w.session(ctx, addr)
		switch {
		case ctx.Err() != nil:
			return nil
		case fatal(err):
			return fmt.Errorf("worker: the cluster at %s refused this worker: %w", addr, err)
		}
		leader := leaderAddr(err)
		if leader != "" && leader != addr {
			w.log.info("following the leader", "from", addr, "to", leader)
		} else {
			w.log.warn("connection to the cluster ended; reconnecting", "addr", addr, "error", err)
		}
		if wait := rc.after(addr, leader, time.Since(began)); wait > 0 && !sleep(ctx, jitter(wait)) {
			return nil
		}
	}
	return nil
}

// fatal errors are answers that a reconnection would only get again. A
// node without the worker service (Unimplemented: a release from before
// it, during an upgrade) is not one: another node, or the same one
// upgraded, will have it.
func fatal(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}

// leaderAddr is the leader's address a NOT_LEADER answer points to, or "".
func leaderAddr(err error) string {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == reasonNotLeader {
			return info.GetMetadata()[metadataLeaderAddress]
		}
	}
	return ""
}

// The ErrorInfo of a node that does not lead, as the API sends it.
const (
	reasonNotLeader       = "NOT_LEADER"
	metadataLeaderAddress = "leader_address"
)

// jitter spreads reconnections of many workers: d ± 20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// conn returns the connection to addr, made once.
func (w *Worker) conn(addr string) (*grpc.ClientConn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.conns[addr]; c != nil {
		return c, nil
	}
	c, err := grpc.NewClient(addr, w.dialOptions()...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	w.conns[addr] = c
	return c, nil
}

// window is the flow-control window of the worker's connection and
// stream, as of the CLI's connections: a tick's offers (about 110 bytes
// each, in messages of up to 1,000) arrive without waiting on window
// updates, each a round trip through two busy processes. A fixed window
// also turns off gRPC's bandwidth-delay pings.
const window = 1 << 20

func (w *Worker) dialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{
		grpc.WithStaticStreamWindowSize(window), grpc.WithStaticConnWindowSize(window),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec.Client)),
	}
	if w.cfg.TLS != nil {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(w.cfg.TLS)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if w.cfg.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(w.cfg.Token)))
	}
	return append(opts, w.cfg.DialOptions...)
}

func (w *Worker) closeConns() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for addr, c := range w.conns {
		_ = c.Close()
		delete(w.conns, addr)
	}
}

// bearer sends the ACL token with every call; TLS is required (Config).
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// handlerNames lists the registered handlers, for the hello.
func (w *Worker) handlerNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.handlers))
	for n := range w.handlers {
		names = append(names, n)
	}
	return names
}

func (w *Worker) hello() *pb.WorkerHello {
	return &pb.WorkerHello{
		Id:          w.cfg.ID,
		Pool:        w.cfg.Pool,
		Tags:        w.cfg.Tags,
		Concurrency: uint32(w.cfg.Concurrency),
		Handlers:    w.handlerNames(),
		Commands:    w.allow.Enabled(),
	}
}
