package api

import (
	"context"
	"fmt"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Bounds of a bootstrap secret an operator chose (serve
// --acl-bootstrap-file). Ours have 43 characters.
const (
	minBootstrapSecret = 32
	maxBootstrapSecret = 4096
)

// CheckBootstrapSecret says what is wrong with a secret an operator chose,
// or nil: long enough not to be guessed, and printable without spaces so
// that it travels as it is in "authorization: Bearer <secret>".
func CheckBootstrapSecret(secret string) error {
	if n := len(secret); n < minBootstrapSecret || n > maxBootstrapSecret {
		return fmt.Errorf("the secret must be %d to %d characters, got %d (`openssl rand -base64 32` makes one)",
			minBootstrapSecret, maxBootstrapSecret, n)
	}
	for i := range len(secret) {
		if c := secret[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("the secret must be printable ASCII without spaces: character %d is %q", i+1, c)
		}
	}
	return nil
}

// FileBootstrap makes the cluster's first management token from a secret
// the operator holds already (serve --acl-bootstrap-file), so that nobody
// who reaches a node between its start and `acl bootstrap` can take the
// cluster: the nodes given the file refuse BootstrapAcl
// (Deps.ACLBootstrapFromFile), and their leader proposes the bootstrap
// itself.
type FileBootstrap struct {
	store  Store
	tokens TokenLister
	audit  *AuditSwitch
	secret string
}

// NewFileBootstrap bootstraps with secret, which must pass
// CheckBootstrapSecret, through d's Store, Tokens and Audit.
func NewFileBootstrap(d Deps, secret string) *FileBootstrap {
	return &FileBootstrap{store: d.Store, tokens: d.Tokens, audit: d.Audit, secret: secret}
}

// Bootstrap proposes the bootstrap unless the cluster has one, after a
// read barrier (a new leader's state may lag the log), and reports whether
// the cluster is bootstrapped: by this call, an earlier one, or anyone
// else. The leader calls it; on a follower the proposal is forwarded.
func (b *FileBootstrap) Bootstrap(ctx context.Context) (bool, error) {
	if err := b.store.ReadBarrier(ctx); err != nil {
		return false, err
	}
	if b.tokens.ACLBootstrapped() {
		return true, nil
	}
	b.audit.ensure(ctx)
	cmd := BootstrapCommand(tokenWithSecret(BootstrapTokenName, pb.AclRole_ACL_ROLE_MANAGEMENT, nil, b.secret))
	cmd.Caller = &pb.Caller{Principal: fsm.PrincipalSystem}
	res, err := b.store.Apply(ctx, cmd)
	switch {
	case err != nil:
		return false, err
	case res.GetCode() == pb.ResultCode_RESULT_CODE_OK:
		return true, nil
	case res.GetCode() == pb.ResultCode_RESULT_CODE_ALREADY_EXISTS:
		return b.tokens.ACLBootstrapped(), nil // another bootstrap came first
	default:
		return false, resultStatus(res)
	}
}
