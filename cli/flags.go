package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
)

// The conventions every command's flags follow, serve's included (the
// binary's main builds serve on them).

// EnvPrefix prefixes the environment variable of every flag: --data-dir
// reads RAFTCRON_DATA_DIR.
const EnvPrefix = "RAFTCRON_"

// Flags that several commands take.
const (
	flagAddr      = "addr"
	flagID        = "id"
	flagLogLevel  = "log-level"
	flagExecAllow = "exec-allow"
	flagExecUser  = "exec-user"
)

// EnvName is the environment variable of a flag.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// SplitList splits a comma-separated flag value, dropping blanks around
// each item.
func SplitList(s string) []string {
	if s == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i, item := range items {
		items[i] = strings.TrimSpace(item)
	}
	return items
}

// JoinErrors reports every mistake of a command line at once, on one line.
func JoinErrors(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// ParseLogLevel reads --log-level.
func ParseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(s)) {
		return l, fmt.Errorf("--%s: %q is not debug, info, warn or error", flagLogLevel, s)
	}
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// IsLoopback reports whether host:port can only be reached from this host.
// A name other than localhost might resolve anywhere, so it is not.
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
