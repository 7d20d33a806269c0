package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// envPrefix prefixes the environment variable of every flag:
// --data-dir reads RAFTCRON_DATA_DIR.
const envPrefix = "RAFTCRON_"

// Flag names of serve; they are also the keys of the --config file.
const (
	flagConfig        = "config"
	flagID            = "id"
	flagDataDir       = "data-dir"
	flagAddr          = "addr"
	flagHTTPAddr      = "http-addr"
	flagPeers         = "peers"
	flagJoin          = "join"
	flagRaftHeartbeat = "raft-heartbeat"
	flagRaftElection  = "raft-election"
	flagRaftLease     = "raft-lease"
	flagLogLevel      = "log-level"
	flagLogFormat     = "log-format"
	flagMemoryLimit   = "memory-limit"
	flagWorkerLease   = "worker-lease"
)

// serveConfig is the validated configuration of one node.
type serveConfig struct {
	ID       string
	DataDir  string
	Addr     string
	HTTPAddr string
	Peers    []cluster.Peer
	Join     []string

	RaftHeartbeat time.Duration
	RaftElection  time.Duration
	RaftLease     time.Duration

	LogLevel  slog.Level
	LogFormat string

	MemoryLimit memoryLimit

	// WorkerLease: a remote worker silent this long loses its attempts.
	WorkerLease time.Duration
}

// addServeFlags declares the flags of serve. A Raft timing left at 0 takes
// hashicorp/raft's default, lowered to fit the timings that are set.
func addServeFlags(fs *pflag.FlagSet) {
	fs.String(flagConfig, "", "YAML file whose keys are flag names (flags > RAFTCRON_* env > file)")
	fs.String(flagID, "", "node ID, unique in the cluster and never reused ([a-z0-9][a-z0-9._-]{0,62})")
	fs.String(flagDataDir, "", "directory of the Raft log, stable store and snapshots")
	fs.String(flagAddr, "127.0.0.1:7001", "host:port for Raft and gRPC, advertised to the other nodes")
	fs.String(flagHTTPAddr, "127.0.0.1:8001", "host:port of the HTTP ops port (/livez /readyz /status /metrics)")
	fs.String(flagPeers, "", "bootstrap set ID=HOST:PORT,...; must contain --id")
	fs.String(flagJoin, "", "HOST:PORT,... of running nodes to join through")
	fs.Duration(flagRaftHeartbeat, 0, "Raft heartbeat timeout (0: Raft's default, 1s)")
	fs.Duration(flagRaftElection, 0, "Raft election timeout (0: Raft's default, 1s; at least --raft-heartbeat)")
	fs.Duration(flagRaftLease, 0, "Raft leader lease timeout (0: half of --raft-heartbeat, at most 500ms; at most --raft-heartbeat)")
	fs.String(flagLogLevel, "info", "debug, info, warn or error")
	fs.String(flagLogFormat, "text", "text or json")
	fs.Duration(flagWorkerLease, remote.DefaultLease, "a remote worker that sends nothing for this long (or whose stream breaks) loses its attempts: "+
		"re-dispatched (at_least_once) or recorded unknown (at_most_once)")
	fs.String(flagMemoryLimit, memoryLimitAuto, "Go soft memory limit: a size (1800MiB, 2GiB), off, or auto: "+
		"GOMEMLIMIT if set, else 90% of the cgroup's memory limit or of the machine's memory")
}

// envName is the environment variable of a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
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
	return os.Getenv(envName(flagConfig))
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

// minWorkerLease keeps a worker's heartbeats (a third of the lease) well
// apart from the network's jitter.
const minWorkerLease = 100 * time.Millisecond

var nodeIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func parseServeConfig(k *koanf.Koanf) (serveConfig, error) {
	var cfg serveConfig
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	cfg.ID = stringValue(k, flagID)
	switch {
	case cfg.ID == "":
		check(errors.New("--id: required"))
	case !nodeIDPattern.MatchString(cfg.ID):
		check(fmt.Errorf("--id: %q must match [a-z0-9][a-z0-9._-]{0,62}", cfg.ID))
	}
	cfg.DataDir = stringValue(k, flagDataDir)
	if cfg.DataDir == "" {
		check(errors.New("--data-dir: required"))
	}
	cfg.Addr = stringValue(k, flagAddr)
	check(checkAdvertisedAddr(flagAddr, cfg.Addr))
	cfg.HTTPAddr = stringValue(k, flagHTTPAddr)
	check(checkListenAddr(flagHTTPAddr, cfg.HTTPAddr))

	var err error
	if cfg.ID != "" {
		cfg.Peers, err = parsePeersFlag(stringValue(k, flagPeers), cfg.ID, cfg.Addr)
		check(err)
	}
	cfg.Join, err = parseJoinFlag(stringValue(k, flagJoin))
	check(err)

	cfg.RaftHeartbeat, err = durationValue(k, flagRaftHeartbeat)
	check(err)
	cfg.RaftElection, err = durationValue(k, flagRaftElection)
	check(err)
	cfg.RaftLease, err = durationValue(k, flagRaftLease)
	check(err)

	cfg.LogLevel, err = parseLogLevel(stringValue(k, flagLogLevel))
	check(err)
	cfg.LogFormat = stringValue(k, flagLogFormat)
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" {
		check(fmt.Errorf("--log-format: %q is not text or json", cfg.LogFormat))
	}
	cfg.MemoryLimit, err = parseMemoryLimit(stringValue(k, flagMemoryLimit))
	check(err)
	cfg.WorkerLease, err = durationValue(k, flagWorkerLease)
	check(err)
	if err == nil && cfg.WorkerLease < minWorkerLease {
		check(fmt.Errorf("--%s: must be at least %s, got %s", flagWorkerLease, minWorkerLease, cfg.WorkerLease))
	}
	if len(errs) > 0 {
		return serveConfig{}, joinOneLine(errs)
	}
	return cfg, nil
}

// joinOneLine reports every configuration mistake at once, on one line.
func joinOneLine(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
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
// a typo into a silent zero. How the Raft timings relate to each other is
// checked by cluster.New, which names the flags.
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
	if d < 0 {
		return 0, fmt.Errorf("--%s: must not be negative, got %s", key, d)
	}
	return d, nil
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(s)) {
		return l, fmt.Errorf("--log-level: %q is not debug, info, warn or error", s)
	}
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// checkAdvertisedAddr: --addr is given to the other nodes, so it needs a
// concrete host and port.
func checkAdvertisedAddr(flag, addr string) error {
	host, _, err := splitHostPort(flag, addr)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("--%s: %q needs a host: it is advertised to the other nodes", flag, addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("--%s: %q is not reachable: it is advertised to the other nodes", flag, addr)
	}
	return nil
}

func checkListenAddr(flag, addr string) error {
	_, _, err := splitHostPort(flag, addr)
	return err
}

func splitHostPort(flag, addr string) (host string, port int, err error) {
	if addr == "" {
		return "", 0, fmt.Errorf("--%s: required (host:port)", flag)
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--%s: %q is not host:port", flag, addr)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("--%s: %q needs a port between 1 and 65535", flag, addr)
	}
	return host, port, nil
}

func parsePeersFlag(s, id, addr string) ([]cluster.Peer, error) {
	if s == "" {
		return nil, nil
	}
	peers, err := cluster.ParsePeers(s)
	if err != nil {
		if strings.HasPrefix(err.Error(), "--peers") {
			return nil, err
		}
		return nil, fmt.Errorf("--peers: %w", err)
	}
	i := slices.IndexFunc(peers, func(p cluster.Peer) bool { return p.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("--peers: must contain --id %s", id)
	}
	if peers[i].Addr != addr {
		return nil, fmt.Errorf("--peers: %s=%s does not match --addr %s", id, peers[i].Addr, addr)
	}
	return peers, nil
}

func parseJoinFlag(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var addrs []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if err := checkAdvertisedAddr(flagJoin, a); err != nil {
			return nil, err
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}
