package server

import (
	"errors"
	"fmt"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// ErrSecretKeys: the cluster stores a secret this node has no key for. The
// node stops rather than run: were it to lead, every job using the secret
// would fail. It learns of the secrets only by replaying the log, so it
// checks once it has caught up after start, and again whenever it becomes
// leader (a secret sealed with a key it lacks may have been put since).
var ErrSecretKeys = errors.New("the cluster stores secrets this node cannot decrypt")

// readyPoll is how often the node looks whether it has caught up with the
// log after start, to check its secret keys.
const readyPoll = 100 * time.Millisecond

// missingKeys is the error for the first sealed secret whose key keys
// lacks, nil if keys open them all.
func missingKeys(sealed []*pb.Secret, keys *secret.Keyring) error {
	for _, sc := range sealed {
		if keys.Has(sc.GetKeyId()) {
			continue
		}
		if keys == nil {
			return fmt.Errorf("%w: %d secrets are stored (%q is sealed with key %s) and this node has no "+
				"--secrets-key-file: start it with the cluster's key file", ErrSecretKeys, len(sealed), sc.GetName(), sc.GetKeyId())
		}
		return fmt.Errorf("%w: secret %q is sealed with key %s, and --secrets-key-file holds %v: add the key that "+
			"sealed it (see docs/operations.md, rotating the secrets key)", ErrSecretKeys, sc.GetName(), sc.GetKeyId(), keys.IDs())
	}
	return nil
}

// checkSecretKeys stops the node if it cannot decrypt every stored secret.
func (s *Server) checkSecretKeys() {
	if err := missingKeys(s.state.SealedSecrets(), s.cfg.SecretKeys); err != nil {
		s.log.Error("stopping: a stored secret needs a key this node does not hold", "err", err)
		s.fail(err)
	}
}

// checkSecretKeysWhenReady checks the node's keys once it has applied the
// log up to the leader's commit index (the /readyz condition), or gives up
// when the node stops first.
func (s *Server) checkSecretKeysWhenReady() {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		select {
		case <-s.stopc:
			return
		case <-t.C:
			if s.node.Ready() {
				s.checkSecretKeys()
				return
			}
		}
	}
}
