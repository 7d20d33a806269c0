package main

import (
	"strings"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

func TestServeConfigACL(t *testing.T) {
	load := func(t *testing.T, args ...string) serveConfig {
		t.Helper()
		cfg, err := loadForTest(t, append(append([]string{}, minimal...), args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	t.Run("off by default", func(t *testing.T) {
		if load(t).ACL {
			t.Fatal("ACLs on without --acl")
		}
	})
	t.Run("flag", func(t *testing.T) {
		if !load(t, "--acl").ACL {
			t.Fatal("--acl did not turn ACLs on")
		}
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv("RAFTCRON_ACL", "true")
		if !load(t).ACL {
			t.Fatal("RAFTCRON_ACL=true did not turn ACLs on")
		}
	})
	t.Run("file", func(t *testing.T) {
		if !load(t, "--config", writeConfig(t, "acl: true\n")).ACL {
			t.Fatal("acl: true in the file did not turn ACLs on")
		}
	})
	t.Run("flag beats env", func(t *testing.T) {
		t.Setenv("RAFTCRON_ACL", "true")
		if load(t, "--acl=false").ACL {
			t.Fatal("--acl=false lost to the environment")
		}
	})
	t.Run("not a boolean", func(t *testing.T) {
		t.Setenv("RAFTCRON_ACL", "sure")
		_, err := loadForTest(t, minimal...)
		if err == nil || !strings.Contains(err.Error(), "--acl:") {
			t.Fatalf("err = %v, want it to name --acl", err)
		}
	})
}

func TestServeConfigACLBootstrapFile(t *testing.T) {
	secret := strings.Repeat("s", 40)
	cfg, err := loadForTest(t, append(append([]string{}, minimal...), "--acl",
		"--acl-bootstrap-file", testutil.WriteFile(t, "boot", "\n"+secret+"\n"))...)
	if err != nil || cfg.ACLBootstrapSecret != secret {
		t.Fatalf("secret %q, %v; want the file's content without the whitespace around it", cfg.ACLBootstrapSecret, err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"without --acl":  {[]string{"--acl-bootstrap-file", testutil.WriteFile(t, "b1", secret)}, "--acl-bootstrap-file: needs ACLs on"},
		"a short secret": {[]string{"--acl", "--acl-bootstrap-file", testutil.WriteFile(t, "b2", "hunter2")}, "--acl-bootstrap-file: the secret must be 32 to 4096 characters"},
		"an empty file":  {[]string{"--acl", "--acl-bootstrap-file", testutil.WriteFile(t, "b3", " ")}, "the file is empty"},
		"no such file":   {[]string{"--acl", "--acl-bootstrap-file", "/nonexistent/boot"}, "--acl-bootstrap-file: stat /nonexistent/boot"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadForTest(t, append(append([]string{}, minimal...), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
