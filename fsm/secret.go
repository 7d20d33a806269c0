package fsm

import (
	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// maxCiphertext bounds a stored secret: the largest value the API takes,
// sealed (a nonce and a tag), with room to spare.
const maxCiphertext = secret.MaxValue + 1024

// secretState holds the secret store: each secret's value only as the
// ciphertext its proposer sealed (the FSM has no key and uses no
// randomness), keyed by name. A stored *pb.Secret is immutable, like a
// stored job.
type secretState struct {
	secrets *btree.BTreeG[secretItem]
}

type secretItem struct {
	name   string
	secret *pb.Secret
}

func secretLess(a, b secretItem) bool { return a.name < b.name }

func newSecretState() secretState {
	return secretState{secrets: btree.NewG(treeDegree, secretLess)}
}

// capture is a copy for a snapshot (copy-on-write).
func (a *secretState) capture() secretState {
	return secretState{secrets: a.secrets.Clone()}
}

func (a *secretState) get(name string) (*pb.Secret, bool) {
	it, ok := a.secrets.Get(secretItem{name: name})
	return it.secret, ok
}

func (a *secretState) put(sc *pb.Secret) {
	a.secrets.ReplaceOrInsert(secretItem{name: sc.GetName(), secret: sc})
}

// checkSecret checks what the FSM needs of a sealed secret to store it;
// field names the command's field in messages.
func checkSecret(field string, sc *pb.Secret) error {
	switch {
	case sc == nil:
		return malformed("%s is required", field)
	case secret.ValidName(sc.GetName()) != nil:
		return malformed("%s.name: %v", field, secret.ValidName(sc.GetName()))
	case sc.GetKeyId() == "":
		return malformed("%s.key_id must not be empty", field)
	case len(sc.GetCiphertext()) == 0 || len(sc.GetCiphertext()) > maxCiphertext:
		return malformed("%s.ciphertext must hold 1 to %d bytes, got %d", field, maxCiphertext, len(sc.GetCiphertext()))
	}
	return nil
}

// putSecret stores a secret's new sealed value: version 1 for a new name,
// else the next version, keeping its creation.
func putSecret(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetPutSecret()
	in := p.GetSecret()
	if err := checkSecret("put_secret.secret", in); err != nil {
		return outcome{}, err
	}
	name := in.GetName()
	old, exists := s.secrets.get(name)
	if v := p.GetExpectedVersion(); v != 0 && v != old.GetVersion() {
		return outcome{}, fail(ErrVersionMismatch, "secret %q is at version %d, not %d", name, old.GetVersion(), v)
	}
	now := e.timestamp()
	sc := &pb.Secret{
		Name: name, Version: 1, Labels: in.GetLabels(),
		CreatedAt: now, UpdatedAt: now, CreatedBy: e.principal, UpdatedBy: e.principal,
		KeyId: in.GetKeyId(), Ciphertext: in.GetCiphertext(),
	}
	if exists {
		sc.Version = old.GetVersion() + 1
		sc.CreatedAt, sc.CreatedBy = old.GetCreatedAt(), old.GetCreatedBy()
	}
	s.secrets.put(sc)
	s.tx.touch()
	return outcome{changed: true, created: !exists}, nil
}

func deleteSecret(s *state, c *pb.Command, _ entry) (outcome, error) {
	name := c.GetDeleteSecret().GetName()
	if name == "" {
		return outcome{}, malformed("delete_secret.name must not be empty")
	}
	if _, ok := s.secrets.get(name); !ok {
		return outcome{}, fail(ErrNotFound, "secret %q not found", name)
	}
	s.secrets.secrets.Delete(secretItem{name: name})
	s.tx.touch()
	return outcome{changed: true}, nil
}

// rotateSecrets replaces the ciphertext of each named secret still at the
// version its proposer re-sealed; a secret put or deleted since keeps what
// it has. Nothing else of a secret changes: its value is the same.
func rotateSecrets(s *state, c *pb.Command, _ entry) (outcome, error) {
	in := c.GetRotateSecrets().GetSecrets()
	for i, sc := range in {
		if err := checkSecret("rotate_secrets.secrets", sc); err != nil {
			return outcome{}, fail(ErrMalformed, "%v (item %d)", err, i)
		}
	}
	changed := false
	for _, sc := range in {
		old, ok := s.secrets.get(sc.GetName())
		if !ok || old.GetVersion() != sc.GetVersion() || old.GetKeyId() == sc.GetKeyId() {
			continue
		}
		next := proto.CloneOf(old)
		next.KeyId, next.Ciphertext = sc.GetKeyId(), sc.GetCiphertext()
		s.secrets.put(next)
		changed = true
	}
	if changed {
		s.tx.touch()
	}
	return outcome{changed: changed}, nil
}

// scopedSecret wraps a secret write so that a caller with a selector
// touches only secrets whose labels include it, before and after: a
// secret outside the scope reads as missing (delete) or taken (put).
func scopedSecret(h handler) handler {
	return func(s *state, c *pb.Command, e entry) (outcome, error) {
		sel := c.GetCaller().GetSelector()
		if len(sel) == 0 {
			return h(s, c, e)
		}
		var name string
		switch k := c.GetKind().(type) {
		case *pb.Command_PutSecret:
			name = k.PutSecret.GetSecret().GetName()
			if !SelectorMatches(k.PutSecret.GetSecret().GetLabels(), sel) {
				return outcome{}, fail(ErrInvalid, "labels: secret %q must carry every label of the caller's selector", name)
			}
			if old, ok := s.secrets.get(name); ok && !SelectorMatches(old.GetLabels(), sel) {
				return outcome{}, fail(ErrAlreadyExists, "secret %q already exists", name)
			}
		case *pb.Command_DeleteSecret:
			name = k.DeleteSecret.GetName()
			if old, ok := s.secrets.get(name); ok && !SelectorMatches(old.GetLabels(), sel) {
				return outcome{}, fail(ErrNotFound, "secret %q not found", name)
			}
		default:
			// A rotation re-seals every secret: management only, which
			// has no selector.
			return outcome{}, fail(ErrInvalid, "rotate_secrets: a caller with a selector may not rotate secrets")
		}
		return h(s, c, e)
	}
}

// publicSecret is a copy of a stored secret for callers: without its
// ciphertext.
func publicSecret(sc *pb.Secret) *pb.Secret {
	c := proto.CloneOf(sc)
	c.Ciphertext = nil
	return c
}
