package main

import (
	"fmt"
	"strings"

	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/policy"
	"github.com/raftcron/raftcron/server"
)

// Flag names of the node's dispatch policy (DESIGN §11).
const (
	flagExecAllow    = "exec-allow"
	flagExecUser     = "exec-user"
	flagHTTPDeny     = "http-deny"
	flagHTTPAllow    = "http-allow"
	flagFenceKeyFile = "fence-key-file"
)

// flagExecEnvAllow opens variables that exec jobs' env may not set by
// default (package policy's list).
const flagExecEnvAllow = "exec-env-allow"

func addPolicyFlags(fs *pflag.FlagSet) {
	fs.String(flagExecAllow, "", "absolute path patterns GLOB,... of the programs exec jobs may run "+
		"('*' stops at '/'); empty: exec jobs are refused")
	fs.String(flagExecUser, "", "run exec jobs as this user (the node must run as root; "+
		"required as root when --exec-allow is set: root itself is allowed, with a warning)")
	fs.String(flagExecEnvAllow, "", "variable names or patterns NAME,... that exec and worker jobs' env may set "+
		"although refused by default (LD_*, BASH_FUNC_*, PYTHON*, ...: they make a loader or interpreter run code)")
	fs.String(flagHTTPDeny, strings.Join(policy.DefaultHTTPDeny, ","), "CIDR,... that webhooks may not reach, "+
		"checked on the dialled address after DNS; empty: none. Also denied: this host's loopback and unspecified "+
		"addresses unless --addr is loopback, and the node's own ports always")
	fs.String(flagHTTPAllow, "", "CIDR,... that webhooks may reach although --http-deny or this host's addresses "+
		"cover them (an allow beats every deny); never the node's own ports")
	fs.String(flagFenceKeyFile, "", "file of the key that signs every dispatch (X-Raftcron-Signature), "+
		"one key per line: the first signs, a second only takes part in a rotation")
}

// parsePolicyConfig reads the policy flags; euid is the node's effective
// user id (switching users takes root).
func parsePolicyConfig(k *koanf.Koanf, euid int) (server.Policy, error) {
	var p server.Policy
	var errs []error
	var err error
	if p.Exec, err = policy.NewExec(cli.SplitList(stringValue(k, flagExecAllow))); err != nil {
		errs = append(errs, fmt.Errorf("--%s: %w", flagExecAllow, err))
	}
	if name := stringValue(k, flagExecUser); name != "" {
		if p.ExecUser, err = lookupExecUser(name, euid); err != nil {
			errs = append(errs, err)
		}
	} else if euid == 0 && p.Exec.Enabled() {
		errs = append(errs, fmt.Errorf("--%s: required: the node runs as root and --%s is set, so exec jobs would run "+
			"as root; name the user to run them as (--%s root, if you mean it)", flagExecUser, flagExecAllow, flagExecUser))
	}
	env, err := policy.NewEnv(cli.SplitList(stringValue(k, flagExecEnvAllow)))
	if err != nil {
		errs = append(errs, fmt.Errorf("--%s: %w", flagExecEnvAllow, err))
	}
	p.Exec = p.Exec.WithEnv(env)
	if p.HTTPDeny, err = policy.NewEgress(cli.SplitList(stringValue(k, flagHTTPDeny))); err != nil {
		errs = append(errs, fmt.Errorf("--%s: %w", flagHTTPDeny, err))
	}
	if p.HTTPDeny, err = p.HTTPDeny.WithAllow(cli.SplitList(stringValue(k, flagHTTPAllow))); err != nil {
		errs = append(errs, fmt.Errorf("--%s: %w", flagHTTPAllow, err))
	}
	if path := stringValue(k, flagFenceKeyFile); path != "" {
		if p.FenceKeys, err = fence.LoadKeys(path); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flagFenceKeyFile, err))
		}
	}
	if len(errs) > 0 {
		return p, cli.JoinErrors(errs)
	}
	return p, nil
}

func lookupExecUser(name string, euid int) (*proc.User, error) {
	if euid != 0 {
		return nil, fmt.Errorf("--%s: the node runs as uid %d, not root, so it cannot run jobs as %s", flagExecUser, euid, name)
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagExecUser, err)
	}
	return u, nil
}
