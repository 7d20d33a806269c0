package worker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/policy"
)

// Defaults of a Config's zero fields.
const (
	DefaultConcurrency = 4
	DefaultMinBackoff  = 100 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
)

// Config is what a worker is built from. The fields mirror the flags of
// `raftcron worker`.
type Config struct {
	// ID names this worker to the cluster, [a-z0-9][a-z0-9._-]{0,62}; a
	// second worker connecting with the same ID replaces the first.
	ID string
	// Addrs are host:port of any raftcron nodes: the worker connects to
	// one and follows it to the leader.
	Addrs []string
	// Pool is the pool whose attempts this worker takes.
	Pool string
	// Tags describe this worker; a job's worker.tags choose among a pool's
	// workers by them.
	Tags map[string]string
	// Concurrency is how many attempts it runs at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// ExecAllow lists the commands this worker runs, with the rules of a
	// node's --exec-allow (policy.NewExec): absolute path patterns matched
	// against command[0] as written, such as /usr/local/bin/* ('*' stops
	// at '/'). Empty: it runs no command, only handlers. This is the
	// worker's own policy; no node can widen it.
	ExecAllow []string
	// ExecUser runs commands as this user (name or uid); the worker must
	// run as root to switch. Empty: as the worker's own user, which a
	// worker running as root with commands allowed refuses (name root to
	// mean it).
	ExecUser string
	// ExecEnvAllow opens environment variables that commands' env may not
	// set by default (those that make a loader or interpreter run code:
	// LD_*, BASH_FUNC_*, PYTHON*, ...; package policy): names or patterns
	// of them, such as PYTHONPATH or LD_LIBRARY_*.
	ExecEnvAllow []string

	// TLS, when set, secures the connections (the CLI's --ca-cert,
	// --client-cert, --client-key); nil connects in plaintext.
	TLS *tls.Config
	// Token is the ACL token sent with every call (the CLI's --token). It
	// needs TLS: a bearer token never crosses the network in the clear.
	Token string
	// DialOptions are added to every connection, after those of TLS and
	// Token: the CLI passes its own here.
	DialOptions []grpc.DialOption

	// MinBackoff and MaxBackoff bound the wait between reconnections; 0
	// means DefaultMinBackoff and DefaultMaxBackoff. A node's answer
	// naming the leader is followed without waiting (see reconnect).
	MinBackoff, MaxBackoff time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ErrConfig: a Config breaks a rule (a *ConfigError says which).
var ErrConfig = errors.New("worker: invalid config")

// ConfigError lists every rule a Config breaks, by field.
type ConfigError struct {
	Problems []Problem
}

// Problem is one broken rule: Field is the Config field's name.
type Problem struct {
	Field, Rule string
}

func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Rule
	}
	return ErrConfig.Error() + ": " + strings.Join(parts, "; ")
}

func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// check reports every broken rule at once, naming the fields, and fills
// in the defaults.
func (c *Config) check() error {
	var e ConfigError
	bad := func(field, format string, a ...any) {
		e.Problems = append(e.Problems, Problem{field, fmt.Sprintf(format, a...)})
	}
	if !idPattern.MatchString(c.ID) {
		bad("ID", "%q must match [a-z0-9][a-z0-9._-]{0,62}", c.ID)
	}
	if !idPattern.MatchString(c.Pool) {
		bad("Pool", "%q must match [a-z0-9][a-z0-9._-]{0,62}", c.Pool)
	}
	if len(c.Addrs) == 0 {
		bad("Addrs", "at least one host:port is required")
	}
	for _, a := range c.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			bad("Addrs", "%q is not host:port", a)
		}
	}
	if c.Concurrency < 0 {
		bad("Concurrency", "must not be negative (the leader sets the upper bound)")
	}
	if _, err := policy.NewExec(c.ExecAllow); err != nil {
		bad("ExecAllow", "%v", err)
	}
	if _, err := policy.NewEnv(c.ExecEnvAllow); err != nil {
		bad("ExecEnvAllow", "%v", err)
	}
	if c.Token != "" && c.TLS == nil {
		bad("Token", "needs TLS (a bearer token must not cross the network in the clear)")
	}
	if c.MinBackoff < 0 || c.MaxBackoff < 0 || (c.MaxBackoff > 0 && c.MinBackoff > c.MaxBackoff) {
		bad("MinBackoff", "backoffs must not be negative, and MinBackoff at most MaxBackoff")
	}
	if len(e.Problems) > 0 {
		return &e
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = min(DefaultMinBackoff, max(c.MaxBackoff, DefaultMinBackoff))
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(DefaultMaxBackoff, c.MinBackoff)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// geteuid is the worker's effective user id; tests replace it.
var geteuid = os.Geteuid

// execUser resolves ExecUser, and refuses it when this process could not
// switch to it. A worker running as root that runs commands must be told
// whom as: commands as root would own the machine.
func execUser(name string, commands bool) (*proc.User, error) {
	euid := geteuid()
	if name == "" {
		if euid == 0 && commands {
			return nil, &ConfigError{[]Problem{{"ExecUser", "required: the worker runs as root and ExecAllow is set, " +
				"so commands would run as root; name the user to run them as (root itself, if you mean it)"}}}
		}
		return nil, nil
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		return nil, &ConfigError{[]Problem{{"ExecUser", err.Error()}}}
	}
	if euid != 0 && uint32(euid) != u.UID {
		return nil, &ConfigError{[]Problem{{"ExecUser", "running commands as " + name + " needs the worker to run as root"}}}
	}
	return u, nil
}
