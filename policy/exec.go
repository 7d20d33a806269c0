package policy

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// ErrExecDenied is wrapped by every refusal of Exec.Allow.
var ErrExecDenied = errors.New("exec denied")

// Exec is the allow-list of programs that exec jobs may run: shell-style
// patterns (path/filepath.Match: '*' stops at '/') matched against the
// job's command[0] as written; and the variables their env may set (Env).
// The zero Exec, and a nil one, allow no program and the default variables.
type Exec struct {
	patterns []string
	env      *Env
}

// NewExec checks the patterns and returns the list they make. Each must be
// an absolute, clean path pattern, so that "/usr/local/bin/*" cannot be
// read as relative to some working directory and a pattern never matches
// a path with "." or ".." elements.
func NewExec(patterns []string) (*Exec, error) {
	e := &Exec{}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return nil, fmt.Errorf("pattern %q: must be an absolute, clean path pattern like /usr/local/bin/*", p)
		}
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
		e.patterns = append(e.patterns, p)
	}
	return e, nil
}

// WithEnv returns a copy of e whose jobs may also set the variables env
// opens (--exec-env-allow).
func (e *Exec) WithEnv(env *Env) *Exec {
	c := &Exec{env: env}
	if e != nil {
		c.patterns = e.patterns
	}
	return c
}

// Env is the variables e's jobs may set besides the default ones (nil: none).
func (e *Exec) Env() *Env {
	if e == nil {
		return nil
	}
	return e.env
}

// AllowEnv returns nil if a job may set every variable of env (Env.Allow),
// and otherwise the refusal of the first in name order.
func (e *Exec) AllowEnv(env map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if err := e.Env().Allow(name); err != nil {
			return err
		}
	}
	return nil
}

// Enabled reports whether any program is allowed at all.
func (e *Exec) Enabled() bool { return e != nil && len(e.patterns) > 0 }

// Allow returns nil if command (a job's command[0]) may run, and otherwise
// an error wrapping ErrExecDenied that names the rule it broke. Only an
// absolute, clean path can match: a relative one would be looked up in a
// PATH, and ".." could climb out of an allowed directory.
func (e *Exec) Allow(command string) error {
	if !e.Enabled() {
		return fmt.Errorf("%w: exec jobs are disabled on this node (--exec-allow is empty)", ErrExecDenied)
	}
	if !filepath.IsAbs(command) || filepath.Clean(command) != command {
		return fmt.Errorf("%w: command[0] %q is not an absolute, clean path", ErrExecDenied, command)
	}
	for _, p := range e.patterns {
		if ok, _ := filepath.Match(p, command); ok {
			return nil
		}
	}
	return fmt.Errorf("%w: command[0] %q matches no pattern of --exec-allow (%s)",
		ErrExecDenied, command, strings.Join(e.patterns, ","))
}
