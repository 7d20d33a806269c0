package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// SecretStore is this node's applied secret store (fsm.FSM).
type SecretStore interface {
	Secrets(selector map[string]string) []*pb.Secret
	Secret(name string) (*pb.Secret, bool)
	SealedSecrets() []*pb.Secret
	StoredJobs(fn func(fsm.StoredJob) bool)
}

// Bounds of the secret service's work.
const (
	// maxReferencedBy is how many referencing jobs a refused delete names.
	maxReferencedBy = 20
	// maxRotateBatch and maxRotateBytes bound one rotate_secrets entry.
	maxRotateBatch = 100
	maxRotateBytes = 2 << 20
)

type secretService struct {
	pb.UnimplementedSecretServiceServer
	store   Store
	secrets SecretStore
	keys    *secret.Keyring
	audit   *AuditSwitch
}

// NewSecretService serves SecretService from d's Store and Secrets
// (required), Keys (without them, this node stores no value and rotates
// nothing) and Audit. Values are sealed here, on the node that receives
// them, before they are proposed: the FSM uses no randomness, and no value
// enters the Raft log in clear.
func NewSecretService(d Deps) pb.SecretServiceServer {
	d = d.withDefaults()
	return &secretService{store: d.Store, secrets: d.Secrets, keys: d.SecretKeys, audit: d.Audit}
}

func (s *secretService) PutSecret(ctx context.Context, req *pb.PutSecretRequest) (*pb.PutSecretResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	name := req.GetName()
	if err := validSecretName("name", name); err != nil {
		return nil, err
	}
	switch n := len(req.GetValue()); {
	case n == 0:
		return nil, fieldError("value", "required")
	case n > secret.MaxValue:
		return nil, fieldError("value", fmt.Sprintf("must be at most %d bytes, got %d", secret.MaxValue, n))
	}
	if err := selectorError(jobspec.ValidateLabels("labels", req.GetLabels())); err != nil {
		return nil, err
	}
	p := PrincipalFrom(ctx)
	if !p.sees(req.GetLabels()) {
		return nil, status.Errorf(codes.PermissionDenied, "labels: secret %q must carry the labels %s of ACL token %q",
			name, FormatSelector(p.Selector), p.Name)
	}
	keyID, sealed, err := s.keys.Seal(name, req.GetValue())
	if err != nil {
		return nil, noKeys(err)
	}
	res, err := s.apply(ctx, &pb.Command{Kind: &pb.Command_PutSecret{PutSecret: &pb.PutSecretCommand{
		Secret:          &pb.Secret{Name: name, Labels: req.GetLabels(), KeyId: keyID, Ciphertext: sealed},
		ExpectedVersion: req.GetExpectedVersion(),
	}}})
	if err != nil {
		return nil, err
	}
	if err := statusOf(s.store.ReadBarrier(ctx)); err != nil {
		return nil, err
	}
	stored, _ := s.secrets.Secret(name)
	return &pb.PutSecretResponse{Secret: stored, Created: res.GetCreated()}, nil
}

func (s *secretService) ListSecrets(ctx context.Context, req *pb.ListSecretsRequest) (*pb.ListSecretsResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if !req.GetStale() {
		if err := statusOf(s.store.ReadBarrier(ctx)); err != nil {
			return nil, err
		}
	}
	return &pb.ListSecretsResponse{Secrets: s.secrets.Secrets(PrincipalFrom(ctx).Selector)}, nil
}

func (s *secretService) DeleteSecret(ctx context.Context, req *pb.DeleteSecretRequest) (*pb.DeleteSecretResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	name := req.GetName()
	if err := validSecretName("name", name); err != nil {
		return nil, err
	}
	if err := statusOf(s.store.ReadBarrier(ctx)); err != nil {
		return nil, err
	}
	if sc, ok := s.secrets.Secret(name); !ok || !PrincipalFrom(ctx).sees(sc.GetLabels()) {
		// Outside the caller's scope reads as missing, as the FSM answers.
		return nil, status.Errorf(codes.NotFound, "secret %q not found", name)
	}
	users, hidden := s.referencedBy(ctx, name)
	if (len(users) > 0 || hidden > 0) && !req.GetForce() {
		return nil, status.Errorf(codes.FailedPrecondition, "secret %q is referenced by %s: change those jobs first, "+
			"or delete it anyway with force (raftcron secret delete --force; their runs then fail with reason %s)", name, describeUsers(users, hidden), secret.ReasonMissing)
	}
	if _, err := s.apply(ctx, &pb.Command{Kind: &pb.Command_DeleteSecret{DeleteSecret: &pb.DeleteSecretCommand{Name: name}}}); err != nil {
		return nil, err
	}
	return &pb.DeleteSecretResponse{ReferencedBy: users}, nil
}

// referencedBy names, up to maxReferencedBy, the jobs the caller may see
// that reference the secret, and counts those it may not.
func (s *secretService) referencedBy(ctx context.Context, name string) (users []string, hidden int) {
	p := PrincipalFrom(ctx)
	ref := secret.Ref(name)
	s.secrets.StoredJobs(func(sj fsm.StoredJob) bool {
		spec := sj.Job.GetSpec()
		if !references(spec, ref) {
			return true
		}
		switch {
		case !fsm.SpecHasLabels(spec, p.Selector):
			hidden++
		case len(users) < maxReferencedBy:
			users = append(users, spec.GetName())
		}
		return true
	})
	return users, hidden
}

// references reports whether a field of spec holds ref, a secret's
// reference (a name never holds the "}" that ends it).
func references(spec *pb.JobSpec, ref string) bool {
	found := false
	_ = jobspec.RewriteSecretFields(spec, func(_, value string) (string, error) {
		found = found || strings.Contains(value, ref)
		return value, nil
	})
	return found
}

func describeUsers(users []string, hidden int) string {
	out := ""
	if len(users) > 0 {
		out = "jobs " + strings.Join(users, ", ")
	}
	if hidden > 0 {
		if out != "" {
			out += " and "
		}
		out += fmt.Sprintf("%d jobs outside the caller's scope", hidden)
	}
	return out
}

// RotateSecrets re-seals every secret not yet under this node's first key
// with it, a batch per entry; each names the version it re-sealed, so a
// value put meanwhile is kept.
func (s *secretService) RotateSecrets(ctx context.Context, _ *pb.RotateSecretsRequest) (*pb.RotateSecretsResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if s.keys == nil {
		return nil, noKeys(secret.ErrNoKeys)
	}
	if err := statusOf(s.store.ReadBarrier(ctx)); err != nil {
		return nil, err
	}
	resp := &pb.RotateSecretsResponse{KeyId: s.keys.Primary()}
	var batch []*pb.Secret
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := s.apply(ctx, &pb.Command{Kind: &pb.Command_RotateSecrets{RotateSecrets: &pb.RotateSecretsCommand{Secrets: batch}}})
		batch, size = nil, 0
		return err
	}
	for _, sc := range s.secrets.SealedSecrets() {
		if sc.GetKeyId() == s.keys.Primary() {
			resp.Unchanged++
			continue
		}
		value, err := s.keys.Open(sc.GetName(), sc.GetKeyId(), sc.GetCiphertext())
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%v: give this node that key too (a second file in --secrets-key-file) "+
				"and rotate again; %d secrets were rotated", err, resp.Rotated)
		}
		keyID, sealed, err := s.keys.Seal(sc.GetName(), value)
		clear(value)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		batch = append(batch, &pb.Secret{Name: sc.GetName(), Version: sc.GetVersion(), KeyId: keyID, Ciphertext: sealed})
		size += len(sealed)
		resp.Rotated++
		if len(batch) == maxRotateBatch || size >= maxRotateBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return resp, nil
}

// served refuses every call of a service built without a secret store.
func (s *secretService) served() error {
	if s.secrets == nil || s.store == nil {
		return status.Error(codes.Unimplemented, "this node serves no secret store")
	}
	return nil
}

// apply commits cmd as the caller's; a result other than OK is an error.
func (s *secretService) apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	s.audit.ensure(ctx)
	cmd.Caller = PrincipalFrom(ctx).caller()
	res, err := s.store.Apply(ctx, cmd)
	if err != nil {
		return nil, statusOf(err)
	}
	if err := okResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

func validSecretName(field, name string) error {
	if name == "" {
		return fieldError(field, "required")
	}
	if err := secret.ValidName(name); err != nil {
		return fieldError(field, "must match "+secret.NameRule)
	}
	return nil
}

// noKeys is the status of a write this node cannot seal.
func noKeys(err error) error {
	if errors.Is(err, secret.ErrNoKeys) {
		return status.Error(codes.FailedPrecondition, "this node has no --secrets-key-file: it cannot store secrets "+
			"(start every node with the same key file; raftcron secret keygen --out FILE writes one)")
	}
	return status.Error(codes.Internal, err.Error())
}
