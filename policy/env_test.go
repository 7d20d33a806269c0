package policy

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// The variables that make a loader, a shell or an interpreter run code
// chosen by their value are refused by default, each naming itself, why,
// and the flag that opens it.
func TestEnvRefusesLoaderAndInterpreterVariablesByDefault(t *testing.T) {
	t.Parallel()
	denied := []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GLIBC_TUNABLES",
		"GCONV_PATH", "MALLOC_TRACE", "OPENSSL_CONF",
		"BASH_FUNC_date%%", "BASH_FUNC_date()", "BASH_ENV", "ENV", "SHELLOPTS", "PS4", "IFS", "ZDOTDIR",
		"PERL5OPT", "PERL5LIB", "PERLLIB", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONWARNINGS", "PYTHON",
		"NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
		"JDK_JAVA_OPTIONS", "CLASSPATH", "PHPRC", "LUA_INIT", "LUA_INIT_5_4",
	}
	for _, e := range []*Env{nil, {}} {
		for _, name := range denied {
			err := e.Allow(name)
			if !errors.Is(err, ErrExecDenied) || !strings.Contains(err.Error(), `"`+name+`"`) ||
				!strings.Contains(err.Error(), "--exec-env-allow") {
				t.Errorf("Allow(%q) = %v, want ErrExecDenied naming it and --exec-env-allow", name, err)
			}
		}
	}
	for _, name := range []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR", "A", "ld_preload", "MY_LD_PRELOAD",
		"XLD_PRELOAD", "BASH", "ENVIRONMENT", "MALLOC_ARENA_MAX", "NODE_ENV", "PYTHO"} {
		if err := (*Env)(nil).Allow(name); err != nil {
			t.Errorf("Allow(%q) = %v, want allowed", name, err)
		}
	}
}

func TestEnvOpensNamedVariables(t *testing.T) {
	t.Parallel()
	e, err := NewEnv([]string{" PYTHONPATH ", "", "LD_LIBRARY_*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PYTHONPATH", "LD_LIBRARY_PATH"} {
		if err := e.Allow(name); err != nil {
			t.Errorf("Allow(%q) = %v, want opened", name, err)
		}
	}
	for _, name := range []string{"PYTHONSTARTUP", "LD_PRELOAD"} {
		if err := e.Allow(name); !errors.Is(err, ErrExecDenied) {
			t.Errorf("Allow(%q) = %v, want still refused", name, err)
		}
	}
	if e.String() != "PYTHONPATH,LD_LIBRARY_*" {
		t.Errorf("String() = %q", e.String())
	}
	for _, bad := range []string{"LD_[", "A=B", "A\x00"} {
		if _, err := NewEnv([]string{bad}); err == nil || !strings.Contains(err.Error(), "pattern") {
			t.Errorf("NewEnv(%q) = %v, want an error naming the pattern", bad, err)
		}
	}
}

// Exec carries the env rules to every place that checks a job: AllowEnv
// judges a whole env and names the first refused variable in name order.
func TestExecAllowEnvChecksEveryVariable(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PATH": "/bin", "PYTHONPATH": "/tmp", "BASH_FUNC_date%%": "() { id; }"}
	for _, e := range []*Exec{nil, {}} {
		if err := e.AllowEnv(env); err == nil || !strings.Contains(err.Error(), `"BASH_FUNC_date%%"`) {
			t.Errorf("AllowEnv = %v, want BASH_FUNC_date%%%% refused first", err)
		}
	}
	exec, err := NewExec([]string{"/bin/*"})
	if err != nil {
		t.Fatal(err)
	}
	open, err := NewEnv([]string{"BASH_FUNC_*"})
	if err != nil {
		t.Fatal(err)
	}
	e := exec.WithEnv(open)
	if err := e.AllowEnv(env); err == nil || !strings.Contains(err.Error(), `"PYTHONPATH"`) {
		t.Errorf("AllowEnv = %v, want PYTHONPATH refused", err)
	}
	if !e.Enabled() || e.Allow("/bin/sh") != nil || exec.AllowEnv(map[string]string{"BASH_FUNC_x%%": ""}) == nil {
		t.Error("WithEnv must keep the programs and leave the original's env rules alone")
	}
	if err := e.AllowEnv(map[string]string{"PATH": "/bin", "BASH_FUNC_x%%": ""}); err != nil {
		t.Errorf("AllowEnv of opened variables = %v", err)
	}
}

// docs/operations.md lists every variable refused by default.
func TestEveryDeniedVariableIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deniedEnv {
		if !strings.Contains(string(doc), "`"+d.name+"`") {
			t.Errorf("docs/operations.md does not list `%s`", d.name)
		}
	}
}
