package main

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/secret"
)

func TestServeSecretsKeyFile(t *testing.T) {
	t.Parallel()
	cfg, err := loadForTest(t, minimal...)
	if err != nil || cfg.SecretKeys != nil {
		t.Fatalf("default: keys %v, %v; want none", cfg.SecretKeys.IDs(), err)
	}
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "new.key"), filepath.Join(dir, "old.key")}
	var ids []string
	for _, p := range paths {
		id, err := secret.WriteKeyFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	cfg, err = loadForTest(t, append(minimal, "--secrets-key-file", strings.Join(paths, ","))...)
	if err != nil || !slices.Equal(cfg.SecretKeys.IDs(), ids) {
		t.Fatalf("two key files: keys %v, %v; want %v, the first encrypting", cfg.SecretKeys.IDs(), err, ids)
	}

	short := testutil.WriteFile(t, "short.key", base64.StdEncoding.EncodeToString([]byte("short"))+"\n")
	for name, c := range map[string]struct{ arg, want string }{
		"missing":   {"/nonexistent/secrets.key", "--secrets-key-file: open /nonexistent/secrets.key"},
		"too short": {short, "holds 5 bytes, want 32"},
		"twice":     {paths[0] + "," + paths[0], "the same key"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadForTest(t, append(minimal, "--secrets-key-file", c.arg)...)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
}
