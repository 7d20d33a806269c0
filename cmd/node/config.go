package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/remote"
	"github.com/raftcron/raftcron/server"
)

// envPrefix starts the environment variable of every flag (cli.EnvName).
const envPrefix = cli.EnvPrefix

// Flag names of serve; they are also the keys of the --config file.
const (
	flagConfig        = "config"
	flagID            = "id"
	flagDataDir       = "data-dir"
	flagAddr          = "addr"
	flagHTTPAddr      = "http-addr"
	flagHealthAddr    = "health-addr"
	flagPeers         = "peers"
	flagJoin          = "join"
	flagRaftHeartbeat = "raft-heartbeat"
	flagRaftElection  = "raft-election"
	flagRaftLease     = "raft-lease"
	flagLogLevel      = "log-level"
	flagLogFormat     = "log-format"
	flagMemoryLimit   = "memory-limit"
	flagDiskStall     = "disk-stall-timeout"
	flagACL           = "acl"
	flagAuditLimit    = "audit-limit"
	flagWorkerLease   = "worker-lease"
	flagAlertHistory  = "alert-history-limit"
	flagClusterName   = "cluster-name"
	flagPublicURL     = "public-url"
)

// serveConfig is the validated configuration of one node: the node's own
// (server.Config) and what only the process has, its logging and memory.
type serveConfig struct {
	server.Config

	LogLevel  slog.Level
	LogFormat string

	MemoryLimit memoryLimit

	securityConfig
}

// flagOfField names the flag behind each field a *cluster.ConfigError may
// report: the one mapping from the node's configuration to serve's flags.
var flagOfField = map[string]string{
	cluster.FieldID:                  flagID,
	cluster.FieldDataDir:             flagDataDir,
	cluster.FieldAddr:                flagAddr,
	server.FieldHTTPAddr:             flagHTTPAddr,
	server.FieldHealthAddr:           flagHealthAddr,
	cluster.FieldPeers:               flagPeers,
	cluster.FieldJoin:                flagJoin,
	cluster.FieldHeartbeatTimeout:    flagRaftHeartbeat,
	cluster.FieldElectionTimeout:     flagRaftElection,
	cluster.FieldLeaderLeaseTimeout:  flagRaftLease,
	cluster.FieldDiskStallTimeout:    flagDiskStall,
	server.FieldMaxJobs:              flagMaxJobs,
	server.FieldMaxSpecBytes:         flagMaxSpecBytes,
	server.FieldMaxHeaders:           flagMaxHeaders,
	server.FieldMaxEnv:               flagMaxEnv,
	server.FieldMaxArgs:              flagMaxArgs,
	server.FieldMaxOpenRuns:          flagMaxOpenRuns,
	server.FieldMaxWatchers:          flagMaxWatchers,
	server.FieldMaxConcurrentStreams: flagMaxConcurrentStreams,
	server.FieldMaxChainDepth:        flagMaxChainDepth,
	server.FieldMaxChainFanout:       flagMaxChainFanout,
	server.FieldMaxBackfillSlots:     flagMaxBackfillSlots,
	server.FieldAuditLimit:           flagAuditLimit,
	server.FieldWorkerLease:          flagWorkerLease,
	server.FieldHTTPHosts:            flagHTTPHost,
	server.FieldACLBootstrapSecret:   flagACLBootstrapFile,
	server.FieldAlertHistoryLimit:    flagAlertHistory,
	server.FieldPublicURL:            flagPublicURL,
}

// flagErrors turns each *cluster.ConfigError in err (joined ones
// included) into the same rule named by its flag; other errors stay as
// they are.
func flagErrors(err error) []error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, flagErrors(e)...)
		}
		return out
	}
	var ce *cluster.ConfigError
	if errors.As(err, &ce) {
		if flag, ok := flagOfField[ce.Field]; ok {
			return []error{fmt.Errorf("--%s: %s", flag, ce.Rule)}
		}
	}
	return []error{err}
}

// flagError is flagErrors on one line.
func flagError(err error) error {
	if err == nil {
		return nil
	}
	return cli.JoinErrors(flagErrors(err))
}

// addServeFlags declares the flags of serve. A Raft timing left at 0 takes
// hashicorp/raft's default, lowered to fit the timings that are set.
func addServeFlags(fs *pflag.FlagSet) {
	fs.String(flagConfig, "", "YAML file whose keys are flag names (flags > RAFTCRON_* env > file)")
	fs.String(flagID, "", "node ID, unique in the cluster and never reused ([a-z0-9][a-z0-9._-]{0,62})")
	fs.String(flagDataDir, "", "directory of the Raft log, stable store and snapshots")
	fs.String(flagAddr, "127.0.0.1:7001", "host:port for Raft and gRPC, advertised to the other nodes")
	fs.String(flagHTTPAddr, "127.0.0.1:8001", "host:port of the ops port (/livez /readyz /status /metrics, the JSON API, the UI); "+
		"HTTPS with the node's certificate under the TLS flags")
	fs.String(flagHealthAddr, "", "host:port of a plain-HTTP port serving only /livez and /readyz, for probes "+
		"that cannot speak TLS; open to anyone (it reveals only liveness); default off")
	fs.String(flagPeers, "", "bootstrap set ID=HOST:PORT,...; must contain --id")
	fs.String(flagJoin, "", "HOST:PORT,... of running nodes to join through")
	fs.Duration(flagRaftHeartbeat, 0, "Raft heartbeat timeout (0: Raft's default, 1s)")
	fs.Duration(flagRaftElection, 0, "Raft election timeout (0: Raft's default, 1s; at least --raft-heartbeat)")
	fs.Duration(flagRaftLease, 0, "Raft leader lease timeout (0: half of --raft-heartbeat, at most 500ms; at most --raft-heartbeat)")
	fs.String(flagLogLevel, "info", "debug, info, warn or error")
	fs.String(flagLogFormat, "text", "text or json")
	fs.Duration(flagDiskStall, cluster.DefaultDiskStallTimeout, "a node whose Raft disk write has not returned for this long "+
		"reports not ready, and exits non-zero if it leads (at least 100ms; 0: the default)")
	fs.Duration(flagWorkerLease, remote.DefaultLease, "a remote worker that sends nothing for this long (or whose stream breaks) loses its attempts: "+
		"re-dispatched (at_least_once) or recorded unknown (at_most_once)")
	fs.String(flagMemoryLimit, memoryLimitAuto, "Go soft memory limit: a size (1800MiB, 2GiB), off, or auto: "+
		"GOMEMLIMIT if set, else 90% of the cgroup's memory limit or of the machine's memory")
	addPolicyFlags(fs)
	addSecretsFlags(fs)
	fs.Bool(flagACL, false, "require an ACL token (authorization: Bearer <secret>) on every call but "+
		"grpc.health.v1; create the first with `raftcron acl bootstrap`, or with --"+flagACLBootstrapFile)
	fs.String(flagACLBootstrapFile, "", "file whose content (32 or more printable characters) is the secret of the first "+
		"management token: the leader bootstraps with it and `acl bootstrap` is refused; give every node the same")
	addLimitFlags(fs)
	fs.Int(flagAuditLimit, api.DefaultAuditLimit, fmt.Sprintf("audit records the cluster keeps, 1 to %d; "+
		"the leader's value is the one in force, so set the same on every node", fsm.MaxAuditLimit))
	fs.Int(flagAlertHistory, 1000, fmt.Sprintf("alert notifications the cluster keeps (alert list), 1 to %d; "+
		"the leader's value is the one in force, so set the same on every node", fsm.MaxAlertLimit))
	fs.String(flagClusterName, "raftcron", "the cluster's name in alert notifications")
	fs.String(flagPublicURL, "", "URL people reach the nodes' UI at, for links in alert notifications "+
		"(default: http(s)://--http-addr of the leader)")
	addSecurityFlags(fs)
}

// loadServeConfig merges the config file, the environment and the flags
// explicitly set on the command line, in rising precedence, and validates the
// result. Only the keys of fs are read from the environment; a key of the
// file that is no flag is an error.
func loadServeConfig(fs *pflag.FlagSet) (serveConfig, error) {
	k := koanf.New(".")

	if path := configPath(fs); path != "" {
		if err := loadConfigFile(k, fs, path); err != nil {
			return serveConfig{}, err
		}
	}
	envProvider := env.Provider(envPrefix, ".", func(name string) string {
		key := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, envPrefix)), "_", "-")
		if key == flagConfig || fs.Lookup(key) == nil {
			return ""
		}
		return key
	})
	if err := k.Load(envProvider, nil); err != nil {
		return serveConfig{}, fmt.Errorf("environment: %w", err)
	}
	if err := k.Load(posflag.Provider(fs, ".", k), nil); err != nil {
		return serveConfig{}, fmt.Errorf("flags: %w", err)
	}
	return parseServeConfig(k)
}

// configPath is --config, or RAFTCRON_CONFIG when the flag is not set.
func configPath(fs *pflag.FlagSet) string {
	if f := fs.Lookup(flagConfig); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv(cli.EnvName(flagConfig))
}

func loadConfigFile(k *koanf.Koanf, fs *pflag.FlagSet, path string) error {
	fk := koanf.New(".")
	if err := fk.Load(file.Provider(path), yaml.Parser()); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	for _, key := range fk.Keys() {
		if key == flagConfig || fs.Lookup(key) == nil {
			return fmt.Errorf("--config %s: unknown key %q (the keys are the flag names of serve)", path, key)
		}
	}
	return k.Merge(fk)
}

// parseServeConfig reads every key into its type, then has the node's
// rules checked where they live (server.Config.Validate); every mistake is
// reported at once, named by its flag.
func parseServeConfig(k *koanf.Koanf) (serveConfig, error) {
	var cfg serveConfig
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	cfg.ID = stringValue(k, flagID)
	cfg.DataDir = stringValue(k, flagDataDir)
	cfg.Addr = stringValue(k, flagAddr)
	cfg.HTTPAddr = stringValue(k, flagHTTPAddr)
	cfg.HealthAddr = stringValue(k, flagHealthAddr)
	cfg.HTTPHosts = cli.SplitList(stringValue(k, flagHTTPHost))
	peers, err := cluster.ParsePeers(stringValue(k, flagPeers))
	check(err)
	cfg.Peers = peers
	cfg.Join = cli.SplitList(stringValue(k, flagJoin))

	cfg.HeartbeatTimeout, err = durationValue(k, flagRaftHeartbeat)
	check(err)
	cfg.ElectionTimeout, err = durationValue(k, flagRaftElection)
	check(err)
	cfg.LeaderLeaseTimeout, err = durationValue(k, flagRaftLease)
	check(err)
	cfg.DiskStallTimeout, err = durationValue(k, flagDiskStall)
	check(err)
	var limitErrs []error
	cfg.Limits, limitErrs = parseLimits(k)
	errs = append(errs, limitErrs...)
	cfg.ACL, err = boolValue(k, flagACL)
	check(err)
	cfg.ACLBootstrapSecret, err = readACLBootstrapFile(k)
	check(err)
	cfg.AuditLimit, err = positiveInt(k, flagAuditLimit)
	check(err)
	cfg.WorkerLease, err = durationValue(k, flagWorkerLease)
	check(err)
	cfg.Alerts.HistoryLimit, err = positiveInt(k, flagAlertHistory)
	check(err)
	cfg.Alerts.ClusterName = stringValue(k, flagClusterName)
	cfg.Alerts.PublicURL = stringValue(k, flagPublicURL)
	// A value that did not parse is left zero, which breaks no rule of its
	// own: the rest are still checked.
	check(cfg.Validate())

	cfg.LogLevel, err = cli.ParseLogLevel(stringValue(k, flagLogLevel))
	check(err)
	cfg.LogFormat = stringValue(k, flagLogFormat)
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" {
		check(fmt.Errorf("--log-format: %q is not text or json", cfg.LogFormat))
	}
	cfg.MemoryLimit, err = parseMemoryLimit(stringValue(k, flagMemoryLimit))
	check(err)
	cfg.Policy, err = parsePolicyConfig(k, os.Geteuid())
	check(err)
	cfg.SecretKeys, err = parseSecretsKeys(k)
	check(err)
	var secErrs []error
	cfg.securityConfig, secErrs = parseSecurity(k, cfg.Addr, cfg.HTTPAddr, cfg.ACL)
	errs = append(errs, secErrs...)
	if len(errs) > 0 {
		return serveConfig{}, flagError(errors.Join(errs...))
	}
	return cfg, nil
}

// stringValue reads a key that may be a string, a number or, in a YAML file,
// a list (joined with commas, as the flags take lists).
func stringValue(k *koanf.Koanf, key string) string {
	switch v := k.Get(key).(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(v)
	case []string:
		return strings.Join(v, ",")
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(v)
	}
}

// durationValue reads a Go duration ("300ms"); koanf's own getter would turn
// a typo into a silent zero. What values the Raft timings may take is
// cluster's rule, checked by Validate.
func durationValue(k *koanf.Koanf, key string) (time.Duration, error) {
	var d time.Duration
	switch v := k.Get(key).(type) {
	case time.Duration:
		d = v
	case string:
		parsed, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("--%s: %q is not a duration like 300ms or 1s", key, v)
		}
		d = parsed
	default:
		return 0, fmt.Errorf("--%s: %v is not a duration like 300ms or 1s", key, v)
	}
	return d, nil
}

// boolValue reads a boolean flag, also given as "true"/"false" by the
// environment or the file.
func boolValue(k *koanf.Koanf, key string) (bool, error) {
	switch v := k.Get(key).(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return false, fmt.Errorf("--%s: %q is not true or false", key, v)
		}
		return b, nil
	default:
		return false, fmt.Errorf("--%s: %v is not true or false", key, v)
	}
}
