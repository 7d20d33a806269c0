package policy

import (
	"fmt"
	"path"
	"strings"
)

// A job's environment is as dangerous as its program: an allowed shell
// script runs whatever BASH_FUNC_date%% defines, and an allowed interpreter
// loads whatever PERL5OPT or NODE_OPTIONS name. So exec and worker jobs may
// not set the variables below unless the node (or worker) opens them by
// name with --exec-env-allow. The list holds the variables that make a
// dynamic loader, a shell or an interpreter run code or read files the
// value chooses before the program's own first line; it is glibc's list of
// variables unsafe for setuid programs (ld.so drops them there), the
// shells', and the interpreters'. Variables one program alone reads (git's
// GIT_SSH_COMMAND, vim's EXINIT) are that program's business: allow only
// programs whose own variables are safe to leave to a job.
var deniedEnv = []struct {
	name string // an exact name, or a prefix ending in '*'
	why  string
}{
	// The dynamic loader.
	{"LD_*", "the dynamic loader loads the libraries it names into the program (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)"},
	{"DYLD_*", "macOS's dynamic loader loads the libraries it names into the program (DYLD_INSERT_LIBRARIES)"},
	{"GLIBC_TUNABLES", "glibc's loader parses it before the program starts (CVE-2023-4911)"},
	{"GCONV_PATH", "glibc loads character-set modules from the directory it names"},
	{"GETCONF_DIR", "glibc runs getconf helpers from the directory it names"},
	{"LOCPATH", "glibc reads locale data from the directory it names"},
	{"NLSPATH", "glibc reads message catalogs, format strings included, from the files it names"},
	{"HOSTALIASES", "the resolver reads the file it names"},
	{"RESOLV_HOST_CONF", "the resolver reads the file it names"},
	{"MALLOC_TRACE", "glibc writes a trace to the file it names"},
	{"OPENSSL_CONF", "OpenSSL reads the configuration it names, which can load engines (shared libraries)"},
	{"OPENSSL_ENGINES", "OpenSSL loads engines (shared libraries) from the directory it names"},
	{"OPENSSL_MODULES", "OpenSSL loads providers (shared libraries) from the directory it names"},
	// Shells.
	{"BASH_FUNC_*", "bash defines the functions it holds (BASH_FUNC_name%%), which then replace commands of the script"},
	{"BASH_ENV", "a non-interactive bash runs the file it names first"},
	{"ENV", "an interactive sh runs the file it names first"},
	{"ZDOTDIR", "zsh runs .zshenv from the directory it names first, even in scripts"},
	{"SHELLOPTS", "bash turns on the options it lists (xtrace runs PS4)"},
	{"BASHOPTS", "bash turns on the options it lists"},
	{"PS4", "bash expands it, command substitutions included, before every traced command (set -x)"},
	{"PS1", "an interactive shell expands it, command substitutions included, before every prompt"},
	{"PROMPT_COMMAND", "an interactive bash runs it before every prompt"},
	{"IFS", "a shell that imports it splits words differently, so a script's commands change"},
	// Interpreters.
	{"PERL5OPT", "perl takes the switches it holds, -M (load a module) and -e included"},
	{"PERL5LIB", "perl loads modules from the directories it names first"},
	{"PERLLIB", "perl loads modules from the directories it names first"},
	{"PERL5DB", "perl's debugger runs the code it holds"},
	{"PYTHON*", "python runs PYTHONSTARTUP, imports from PYTHONPATH first, and imports what PYTHONWARNINGS or PYTHONBREAKPOINT name"},
	{"NODE_OPTIONS", "node takes the options it holds, --require (load a module) included"},
	{"NODE_PATH", "node loads modules from the directories it names"},
	{"RUBYOPT", "ruby takes the options it holds, -r (load a library) included"},
	{"RUBYLIB", "ruby loads libraries from the directories it names first"},
	{"JAVA_TOOL_OPTIONS", "the JVM takes the options it holds, -javaagent (load code) included"},
	{"_JAVA_OPTIONS", "the JVM takes the options it holds, -javaagent (load code) included"},
	{"JDK_JAVA_OPTIONS", "the java launcher takes the options it holds, -javaagent (load code) included"},
	{"CLASSPATH", "the JVM loads classes, the main class included, from the paths it names"},
	{"PHPRC", "php reads the php.ini it names, whose auto_prepend_file runs code"},
	{"PHP_INI_SCAN_DIR", "php reads every .ini in the directories it names, whose auto_prepend_file runs code"},
	{"LUA_INIT*", "lua runs the code it holds before the script"},
	{"LUA_PATH*", "lua loads modules from the paths it names first"},
	{"LUA_CPATH*", "lua loads C modules (shared libraries) from the paths it names first"},
}

// Env decides which environment variables exec and worker jobs may set:
// any but those of the default list (DeniedEnv), unless a pattern of
// --exec-env-allow opens them. The zero Env, and a nil one, open nothing.
type Env struct {
	open []string
}

// NewEnv checks the patterns of --exec-env-allow: variable names or shell
// patterns of them (path.Match: PYTHON*, LD_LIBRARY_PATH).
func NewEnv(patterns []string) (*Env, error) {
	e := &Env{}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.ContainsAny(p, "=\x00") {
			return nil, fmt.Errorf("pattern %q: a variable name (pattern) cannot hold '=' or NUL", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
		e.open = append(e.open, p)
	}
	return e, nil
}

// Allow returns nil if a job may set the variable name, and otherwise an
// error wrapping ErrExecDenied that names it and says why.
func (e *Env) Allow(name string) error {
	why, denied := deniedName(name)
	if !denied || e.opens(name) {
		return nil
	}
	return fmt.Errorf("%w: environment variable %q is refused by default: %s (--exec-env-allow opens it)",
		ErrExecDenied, name, why)
}

func (e *Env) opens(name string) bool {
	if e == nil {
		return false
	}
	for _, p := range e.open {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// deniedName reports whether name is on the default list, and why.
func deniedName(name string) (why string, denied bool) {
	for _, d := range deniedEnv {
		if prefix, ok := strings.CutSuffix(d.name, "*"); ok && strings.HasPrefix(name, prefix) || name == d.name {
			return d.why, true
		}
	}
	return "", false
}

// String lists the opened patterns, comma-separated.
func (e *Env) String() string {
	if e == nil {
		return ""
	}
	return strings.Join(e.open, ",")
}
