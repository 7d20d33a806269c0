package main

import (
	"strings"
	"testing"
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
