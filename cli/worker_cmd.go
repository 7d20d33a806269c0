package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/worker"
)

// Flags of `raftcron worker` besides the client's.
const (
	flagPool        = "pool"
	flagTags        = "tags"
	flagConcurrency = "concurrency"
)

// flagExecEnvAllow opens variables that commands' env may not set by default
// (serve has the same flag).
const flagExecEnvAllow = "exec-env-allow"

// workerFlagOf names the flag of each worker.Config field, for errors.
var workerFlagOf = map[string]string{
	"ID": flagID, "Addrs": flagAddr, "Pool": flagPool, "Tags": flagTags, "Concurrency": flagConcurrency,
	"ExecAllow": flagExecAllow, "ExecUser": flagExecUser, "ExecEnvAllow": flagExecEnvAllow,
}

func newWorkerCmd(version string) *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run attempts of jobs with a worker target, taken from the leader",
		Long: "Run a remote worker: it connects to any node given in --addr, follows it to\n" +
			"the leader, and runs the attempts of jobs whose worker.pool is --pool, up to\n" +
			"--concurrency at once. It runs only the commands --exec-allow permits\n" +
			"(the rules of serve's --exec-allow; none by default), whatever the cluster\n" +
			"asks. Every flag also reads RAFTCRON_<FLAG_IN_UPPER_SNAKE>.\n" +
			"SIGTERM or SIGINT stops it; the leader re-dispatches what it was running.\n" +
			"Callers: a token of role worker bound to --pool (or management) when the cluster\n" +
			"runs --acl; pass it with --token-file (RAFTCRON_TOKEN_FILE), which keeps it out of ps.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			cfg, err := workerConfig(cmd.Flags(), &o)
			if err != nil {
				return err
			}
			w, err := worker.New(cfg)
			if err != nil {
				return workerFlagError(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			cfg.Logger.Info("raftcron worker started", "id", cfg.ID, "pool", cfg.Pool, "addr", strings.Join(cfg.Addrs, ","),
				"concurrency", cfg.Concurrency, "exec_allow", strings.Join(cfg.ExecAllow, ","),
				"exec_env_allow", strings.Join(cfg.ExecEnvAllow, ","), "version", version)
			return w.Run(ctx)
		}),
	}
	fs := cmd.Flags()
	o.register(fs)
	// A worker has no output and no per-call deadline.
	_ = fs.MarkHidden(flagOutput)
	_ = fs.MarkHidden(flagTimeout)
	fs.String(flagID, "", "this worker's ID, unique among workers ([a-z0-9][a-z0-9._-]{0,62})")
	fs.String(flagPool, "", "the pool whose attempts it runs")
	fs.String(flagTags, "", "k=v,... that jobs' worker.tags choose by")
	fs.Int(flagConcurrency, worker.DefaultConcurrency, "attempts it runs at once")
	fs.String(flagExecAllow, "", "absolute path patterns GLOB,... of the commands it may run "+
		"('*' stops at '/'); empty: none, only handlers")
	fs.String(flagExecUser, "", "run commands as this user (the worker must run as root; "+
		"required as root when --exec-allow is set: root itself is allowed, with a warning)")
	fs.String(flagExecEnvAllow, "", "variable names or patterns NAME,... that commands' env may set although "+
		"refused by default (LD_*, BASH_FUNC_*, PYTHON*, ...: they make a loader or interpreter run code)")
	fs.String(flagLogLevel, "info", "debug, info, warn or error")
	return cmd
}

// workerConfig reads the flags, each falling back to its RAFTCRON_*
// variable.
func workerConfig(fs *pflag.FlagSet, o *clientOptions) (worker.Config, error) {
	if err := o.resolve(fs); err != nil {
		return worker.Config{}, err
	}
	get := func(name string) string {
		f := fs.Lookup(name)
		if !f.Changed {
			if v, ok := os.LookupEnv(EnvName(name)); ok {
				return strings.TrimSpace(v)
			}
		}
		return strings.TrimSpace(f.Value.String())
	}
	var errs []error
	cfg := worker.Config{
		ID:           get(flagID),
		Pool:         get(flagPool),
		Addrs:        SplitList(o.addr),
		ExecAllow:    SplitList(get(flagExecAllow)),
		ExecUser:     get(flagExecUser),
		ExecEnvAllow: SplitList(get(flagExecEnvAllow)),
		DialOptions:  callOptions(),
	}
	if err := workerAuth(&o.auth, &cfg); err != nil {
		errs = append(errs, err)
	}
	if _, err := fmt.Sscan(get(flagConcurrency), &cfg.Concurrency); err != nil || cfg.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--%s: %q is not a positive number", flagConcurrency, get(flagConcurrency)))
	}
	tags, err := parseTags(get(flagTags))
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Tags = tags
	level, err := ParseLogLevel(get(flagLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return worker.Config{}, JoinErrors(errs)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	return cfg, nil
}

func parseTags(s string) (map[string]string, error) {
	items := SplitList(s)
	if len(items) == 0 {
		return nil, nil
	}
	tags := make(map[string]string, len(items))
	for _, item := range items {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s: %q is not key=value", flagTags, item)
		}
		tags[k] = v
	}
	return tags, nil
}

// workerAuth connects the worker as the client flags say: TLS and the
// token through the SDK's own fields when --ca-cert is set; without it, a
// token (which the client flags allow on loopback alone) is sent as every
// client command sends it.
func workerAuth(a *Auth, cfg *worker.Config) error {
	if a.CACert == "" {
		cfg.DialOptions = append(cfg.DialOptions, a.tokenOptions()...)
		return nil
	}
	tlsCfg, err := a.tlsConfig()
	if err != nil {
		return err
	}
	cfg.TLS, cfg.Token = tlsCfg, a.Token
	return nil
}

// workerFlagError names the flags of a worker.Config's broken rules.
func workerFlagError(err error) error {
	var ce *worker.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	msgs := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		name, ok := workerFlagOf[p.Field]
		if !ok {
			name = p.Field
		}
		msgs[i] = "--" + name + ": " + p.Rule
	}
	return errors.New(strings.Join(msgs, "; "))
}
