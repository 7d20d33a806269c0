package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
)

// Target is a cluster that a program calls as the CLI does, with the
// values of the client flags (raftcron dev calls its demo cluster through
// it).
type Target struct {
	// Addr is --addr: host:port of a node, or a comma-separated list of
	// them tried in turn.
	Addr    string
	Timeout time.Duration
	Auth    Auth
}

// Call dials t, runs fn bounded by t.Timeout, and describes its failure in
// the CLI's one line, naming subject (`job "x"`; may be empty). Calls on
// the connection fn gets go to t's addresses in turn and follow NOT_LEADER
// answers, as the CLI's do.
func (t Target) Call(ctx context.Context, subject string, fn func(context.Context, grpc.ClientConnInterface) error) error {
	return invoke(ctx, &clientOptions{addr: t.Addr, timeout: t.Timeout, auth: t.Auth}, subject, fn)
}

// MayHaveApplied reports whether the error of a write made through Call
// leaves it possibly committed (the answer was lost, or the outcome is
// unknown), rather than refused with nothing written; the caller reads the
// state back before it writes again.
func MayHaveApplied(err error) bool { return mayHaveRun(err) }

// Exports are the lines a second terminal pastes to use the CLI on t.
func (t Target) Exports() []string {
	lines := []string{exportLine(EnvName(flagAddr), t.Addr)}
	if t.Auth.CACert != "" {
		lines = append(lines,
			exportLine(EnvName(flagCACert), t.Auth.CACert),
			exportLine(EnvName(flagClientCert), t.Auth.ClientCert),
			exportLine(EnvName(flagClientKey), t.Auth.ClientKey))
	}
	if t.Auth.Token != "" {
		lines = append(lines, exportLine(EnvName(flagToken), t.Auth.Token))
	}
	return lines
}

func exportLine(name, value string) string {
	return fmt.Sprintf("export %s=%s", name, shellQuote(value))
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters and the commas of an address list.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
