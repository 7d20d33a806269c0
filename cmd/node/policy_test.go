package main

import (
	"strings"
	"testing"

	"github.com/knadh/koanf/v2"

	"github.com/raftcron/raftcron/internal/testutil"
)

const testFenceKey = "test-fence-key-test-fence-key-test-fence-key="

func TestServePolicyFlags(t *testing.T) {
	t.Parallel()
	cfg, err := loadForTest(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy
	if p.Exec.Enabled() || p.ExecUser != nil || p.FenceKeys != nil || p.HTTPDeny.String() != "169.254.0.0/16,fe80::/10,fd00:ec2::254/128,100.100.100.200/32" || p.HTTPDeny.Allowed() != "" {
		t.Fatalf("defaults: exec %v, user %v, keys %v, http-deny %q; want exec off, no user, unsigned, metadata services denied",
			p.Exec.Enabled(), p.ExecUser, p.FenceKeys != nil, p.HTTPDeny.String())
	}
	keyFile := testutil.WriteFile(t, "fence.key", testFenceKey+"\n")
	cfg, err = loadForTest(t, append(append(minimal, "--exec-allow", "/usr/local/bin/*,/opt/jobs/report",
		"--http-deny", "", "--http-allow", "127.0.0.1, 10.1.0.0/16", "--fence-key-file", keyFile,
		"--exec-env-allow", "PYTHONPATH"), testutil.ExecUserArgs()...)...)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Policy; !p.Exec.Enabled() || p.Exec.Allow("/opt/jobs/report") != nil || p.HTTPDeny.String() != "" || p.HTTPDeny.Allowed() != "127.0.0.1/32,10.1.0.0/16" || p.FenceKeys == nil ||
		p.Exec.AllowEnv(map[string]string{"PYTHONPATH": "/srv"}) != nil || p.Exec.AllowEnv(map[string]string{"PYTHONSTARTUP": "x"}) == nil {
		t.Fatalf("set: %+v", p)
	}

	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"relative pattern":  {[]string{"--exec-allow", "bin/*"}, `--exec-allow: pattern "bin/*": must be an absolute`},
		"bad range":         {[]string{"--http-deny", "10.0.0.0/33"}, `--http-deny: "10.0.0.0/33" is not a CIDR range`},
		"bad allowed range": {[]string{"--http-allow", "localhost"}, `--http-allow: "localhost" is not a CIDR range`},
		"missing key file":  {[]string{"--fence-key-file", "/nonexistent/fence.key"}, "--fence-key-file: fence: open /nonexistent/fence.key"},
		"short key":         {[]string{"--fence-key-file", testutil.WriteFile(t, "short.key", "short\n")}, "want at least 32"},
		"unknown exec user": {[]string{"--exec-user", "raftcron-no-such-user"}, "--exec-user: "},
		"bad env pattern":   {[]string{"--exec-env-allow", "LD_["}, `--exec-env-allow: pattern "LD_[": syntax error`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadForTest(t, append(minimal, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
}

func TestServeExecUserNeedsRoot(t *testing.T) {
	t.Parallel()
	k := koanf.New(".")
	if err := k.Set(flagExecUser, "nobody"); err != nil {
		t.Fatal(err)
	}
	_, err := parsePolicyConfig(k, 1000)
	if err == nil || !strings.Contains(err.Error(), "--exec-user: the node runs as uid 1000, not root") {
		t.Fatalf("as uid 1000: %v, want --exec-user refused", err)
	}
	if _, err := parsePolicyConfig(k, 0); err != nil {
		testutil.SkipOrFail(t, "no user nobody here to switch to: %v", err)
	}
}

// A node running as root with exec allowed refuses to start until told whom
// to run jobs as; naming root is allowed (Policy.log warns at start). Not
// root, or exec off, it asks nothing.
func TestRootNodeWithExecNeedsExecUser(t *testing.T) {
	t.Parallel()
	k := koanf.New(".")
	if err := k.Set(flagExecAllow, "/usr/local/bin/*"); err != nil {
		t.Fatal(err)
	}
	_, err := parsePolicyConfig(k, 0)
	if err == nil || !strings.Contains(err.Error(), "--exec-user: required: the node runs as root and --exec-allow is set") {
		t.Fatalf("as root with --exec-allow and no --exec-user: %v, want --exec-user required", err)
	}
	if _, err := parsePolicyConfig(k, 1000); err != nil {
		t.Fatalf("as uid 1000: %v", err)
	}
	if _, err := parsePolicyConfig(koanf.New("."), 0); err != nil {
		t.Fatalf("as root without exec: %v", err)
	}
	if err := k.Set(flagExecUser, "root"); err != nil {
		t.Fatal(err)
	}
	p, err := parsePolicyConfig(k, 0)
	if err != nil {
		testutil.SkipOrFail(t, "no user root here to name: %v", err)
	}
	if p.ExecUser == nil || p.ExecUser.UID != 0 {
		t.Fatalf("--exec-user root: %+v", p.ExecUser)
	}
}
