package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
)

const (
	flagOutput  = "output"
	flagTimeout = "timeout"

	defaultClientAddr = "127.0.0.1:7001"
)

// clientOptions are the flags every client command takes.
type clientOptions struct {
	// addr is --addr: one host:port or a comma-separated list of them.
	addr    string
	output  outputFormat
	timeout time.Duration
	auth    Auth
	// conn is the command's connection, once dial has made it.
	conn *nodes
}

func (o *clientOptions) register(fs *pflag.FlagSet) {
	o.output = outputTable
	fs.StringVar(&o.addr, flagAddr, defaultClientAddr,
		"host:port of any raftcron node, or a comma-separated list tried in turn (env RAFTCRON_ADDR)")
	fs.VarP(&o.output, flagOutput, "o", "output format: table, json or yaml (env RAFTCRON_OUTPUT)")
	fs.DurationVar(&o.timeout, flagTimeout, 10*time.Second, "deadline of each call (env RAFTCRON_TIMEOUT)")
	o.auth.register(fs)
}

// resolve fills the flags not set on the command line from RAFTCRON_*.
func (o *clientOptions) resolve(fs *pflag.FlagSet) error {
	for _, name := range append([]string{flagAddr, flagOutput, flagTimeout}, clientAuthFlags...) {
		f := fs.Lookup(name)
		if f == nil || f.Changed {
			continue
		}
		v, ok := os.LookupEnv(EnvName(name))
		if !ok {
			continue
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("%s: %w", EnvName(name), err)
		}
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout: must be positive, got %s", o.timeout)
	}
	if _, err := ParseAddrs(o.addr); err != nil {
		return err
	}
	if err := o.auth.loadToken(); err != nil {
		return err
	}
	return o.auth.check(o.addr)
}

// ParseAddrs reads --addr: one host:port or a comma-separated list of
// them, in the order a client tries them.
func ParseAddrs(s string) ([]string, error) {
	addrs := SplitList(s)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("--%s: required (host:port, or a comma-separated list of them)", flagAddr)
	}
	for _, a := range addrs {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("--%s: %q is not host:port (a list separates them with commas)", flagAddr, a)
		}
	}
	return addrs, nil
}

// persistentResolve is the PersistentPreRunE of the client command groups.
func (o *clientOptions) persistentResolve() func(*cobra.Command, []string) error {
	return RunE(func(cmd *cobra.Command, _ []string) error { return o.resolve(cmd.Flags()) })
}

// clientWindow is the flow-control window of a client connection: a whole
// ApplyJobs answer (up to 1000 jobs) arrives without waiting for window
// updates.
const clientWindow = 1 << 20

// dial makes the command's connection to the nodes of --addr; gRPC
// connects lazily on the first call. Each address is dialled as given
// (passthrough), so that a name that does not resolve fails in the
// dialer, which keeps the error.
func (o *clientOptions) dial() (*nodes, error) {
	addrs, err := ParseAddrs(o.addr)
	if err != nil {
		return nil, err
	}
	creds, err := o.auth.transportCredentials()
	if err != nil {
		return nil, err
	}
	o.conn = newNodes(addrs, func(addr string, d *dialer) (*grpc.ClientConn, error) {
		opts := append(o.auth.tokenOptions(),
			grpc.WithContextDialer(d.dial),
			grpc.WithTransportCredentials(d.watch(creds)))
		conn, err := grpc.NewClient("passthrough:///"+addr, append(opts, callOptions()...)...)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", flagAddr, addr, err)
		}
		return conn, nil
	})
	return o.conn, nil
}

// callOptions are how every client command, and the worker, calls a node,
// whatever the transport: the worker's SDK sets its own.
func callOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithStaticStreamWindowSize(clientWindow),
		grpc.WithStaticConnWindowSize(clientWindow),
	}
}

// callContext bounds one call by --timeout.
func (o *clientOptions) callContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, o.timeout)
}

// call describes one RPC so that its error can name what it was about.
type call struct {
	// addr is the node the call went to last.
	addr    string
	timeout time.Duration
	// subject is what the call was about, like `job "nightly"`; may be empty.
	subject string
	// expectedVersion is the version the call required, if any.
	expectedVersion uint64
}

func (o *clientOptions) call(subject string) call {
	addr := o.addr
	if o.conn != nil {
		addr = o.conn.lastAddr()
	}
	return call{addr: addr, timeout: o.timeout, subject: subject}
}

// describe turns a gRPC error into one readable line.
func (c call) describe(err error) error {
	var down *unreachableError
	if errors.As(err, &down) {
		return down
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.InvalidArgument:
		return c.invalid(st)
	case codes.NotFound:
		return c.plain(st, "not found")
	case codes.AlreadyExists:
		return c.plain(st, "already exists")
	case codes.FailedPrecondition:
		return c.stale(st)
	case codes.Unavailable:
		return c.unavailable(st)
	case codes.DeadlineExceeded:
		return fmt.Errorf("no answer from raftcron at %s within %s", c.addr, c.timeout)
	case codes.Canceled:
		return errors.New("canceled")
	case codes.Unauthenticated:
		return fmt.Errorf("not authenticated: %s", st.Message())
	case codes.PermissionDenied:
		return fmt.Errorf("permission denied: %s", st.Message())
	default:
		return fmt.Errorf("%s (%s)", st.Message(), st.Code())
	}
}

func (c call) about() string {
	if c.subject == "" {
		return "request"
	}
	return c.subject
}

func (c call) invalid(st *status.Status) error {
	var rules []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				rules = append(rules, formatViolation(v.GetField(), v.GetDescription()))
			}
		}
	}
	if len(rules) == 0 {
		return fmt.Errorf("invalid %s: %s", c.about(), st.Message())
	}
	return fmt.Errorf("invalid %s: %s", c.about(), strings.Join(rules, "; "))
}

func formatViolation(field, rule string) string {
	if field == "" {
		return rule
	}
	return field + ": " + rule
}

func (c call) plain(st *status.Status, what string) error {
	if c.subject == "" {
		return errors.New(st.Message())
	}
	return fmt.Errorf("%s %s", c.subject, what)
}

// stale reports an optimistic-concurrency conflict; the server's message
// says which version the job is at. Only a call that expected a version can
// be stale; any other precondition (a refused trigger, ACLs bootstrapped
// already, a finished run) says what it is itself.
func (c call) stale(st *status.Status) error {
	if c.expectedVersion == 0 {
		return errors.New(st.Message())
	}
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.PreconditionFailure); ok {
			return errors.New(st.Message())
		}
	}
	msg := st.Message()
	if msg == "" {
		msg = fmt.Sprintf("%s is no longer at version %d", c.about(), c.expectedVersion)
	}
	return fmt.Errorf("version: stale: %s; get it again and retry", msg)
}

func (c call) unavailable(st *status.Status) error {
	if info, ok := cluster.NotLeaderInfo(st.Err()); ok {
		id, addr := info.GetMetadata()[cluster.MetadataLeaderID], info.GetMetadata()[cluster.MetadataLeaderAddress]
		if id == "" && addr == "" {
			return errors.New("no leader (no leader known yet; is a quorum up?)")
		}
		return fmt.Errorf("no leader (last known leader %s at %s)", id, addr)
	}
	return fmt.Errorf("raftcron at %s is unavailable: %s", c.addr, st.Message())
}
