package server

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

func keyring(t *testing.T, seeds ...byte) *secret.Keyring {
	t.Helper()
	raw := make([][]byte, len(seeds))
	for i, s := range seeds {
		raw[i] = bytes.Repeat([]byte{s}, secret.KeySize)
	}
	k, err := secret.NewKeyring(raw...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// startOne starts a one-node cluster on dir and addr with keys.
func startOne(t *testing.T, dir, addr string, keys *secret.Keyring) *Server {
	t.Helper()
	s, err := New(Config{
		ID: "n1", DataDir: dir, Addr: addr, HTTPAddr: "127.0.0.1:0", Peers: []cluster.Peer{{ID: "n1", Addr: addr}},
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 200 * time.Millisecond,
		Logger: testLogger(), NoSync: true, SecretKeys: keys,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNodeWithoutTheSecretsKeyStops: a node learns that the cluster stores
// secrets by replaying its log, and stops once it has, naming what it
// lacks; with the key that sealed them (second, during a rotation) it
// runs. The value never reaches the data dir in clear.
func TestNodeWithoutTheSecretsKeyStops(t *testing.T) {
	dir, addr := filepath.Join(t.TempDir(), "n1"), freeAddr(t)
	old := keyring(t, 1)
	s := startOne(t, dir, addr, old)
	testutil.WaitFor(t, 15*time.Second, "the node ready", s.Ready)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := pb.NewSecretServiceClient(dialPlain(t, addr)).PutSecret(ctx,
		&pb.PutSecretRequest{Name: "db", Value: []byte("plaintext-value")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		keys *secret.Keyring
		want string
	}{
		{nil, "no --secrets-key-file"},
		{keyring(t, 2), old.Primary()},
	} {
		s := startOne(t, dir, addr, tc.keys)
		select {
		case err := <-s.Err():
			if !errors.Is(err, ErrSecretKeys) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("keys %v: %v, want ErrSecretKeys naming %q", tc.keys.IDs(), err, tc.want)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("keys %v: the node still runs without the key of a stored secret", tc.keys.IDs())
		}
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}

	if err := missingKeys(s.FSM().SealedSecrets(), keyring(t, 2, 1)); err != nil {
		t.Errorf("a keyring holding the sealing key second: %v", err)
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("plaintext-value")) {
			t.Errorf("%s holds the secret's value in clear", path)
		}
		return nil
	})
}
