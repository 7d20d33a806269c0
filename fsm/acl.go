package fsm

import (
	"crypto/sha256"
	"time"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// aclState holds the ACL tokens. Secrets never reach it: the API hashes
// them, so a snapshot or a log leaks nothing a caller could present.
type aclState struct {
	// tokens is keyed by accessor ID. A stored token is immutable, like a
	// stored job.
	tokens *btree.BTreeG[tokenItem]
	// bootstrapped is set by the first bootstrap_acl and never cleared, so
	// that bootstrap works once even after every token is deleted.
	bootstrapped bool
	// byHash (secret hash → accessor) and byName (name → accessor) are
	// derived from tokens: Restore rebuilds them, snapshots ignore them.
	byHash map[string]string
	byName map[string]string
}

type tokenItem struct {
	accessor string
	token    *pb.AclToken
}

func tokenLess(a, b tokenItem) bool { return a.accessor < b.accessor }

func newACLState() aclState {
	return aclState{
		tokens: btree.NewG(treeDegree, tokenLess),
		byHash: make(map[string]string),
		byName: make(map[string]string),
	}
}

// capture is a copy for a snapshot: the tree (copy-on-write) and the flag.
func (a *aclState) capture() aclState {
	return aclState{tokens: a.tokens.Clone(), bootstrapped: a.bootstrapped}
}

// put stores t, which must have passed checkToken and checkUnique.
func (a *aclState) put(t *pb.AclToken) {
	a.tokens.ReplaceOrInsert(tokenItem{accessor: t.GetAccessorId(), token: t})
	a.byHash[string(t.GetSecretHash())] = t.GetAccessorId()
	a.byName[t.GetName()] = t.GetAccessorId()
}

func (a *aclState) delete(t *pb.AclToken) {
	a.tokens.Delete(tokenItem{accessor: t.GetAccessorId()})
	delete(a.byHash, string(t.GetSecretHash()))
	delete(a.byName, t.GetName())
}

func (a *aclState) token(accessor string) (*pb.AclToken, bool) {
	it, ok := a.tokens.Get(tokenItem{accessor: accessor})
	return it.token, ok
}

// checkUnique refuses a token whose accessor, name or secret is taken: a
// name is the principal recorded in updated_by, and a secret must find
// one token.
func (a *aclState) checkUnique(t *pb.AclToken) error {
	switch {
	case a.tokens.Has(tokenItem{accessor: t.GetAccessorId()}):
		return fail(ErrAlreadyExists, "ACL token with accessor ID %q already exists", t.GetAccessorId())
	case a.byName[t.GetName()] != "":
		return fail(ErrAlreadyExists, "ACL token named %q already exists", t.GetName())
	case a.byHash[string(t.GetSecretHash())] != "":
		return fail(ErrAlreadyExists, "ACL token with that secret already exists")
	}
	return nil
}

// lastingManagementTokens counts the management tokens that never
// expire. Before command version 3 no token expires, so this counts what
// version 2 counted.
func (a *aclState) lastingManagementTokens() int {
	n := 0
	a.tokens.Ascend(func(it tokenItem) bool {
		if it.token.GetRole() == pb.AclRole_ACL_ROLE_MANAGEMENT && it.token.GetExpiresAt() == nil {
			n++
		}
		return true
	})
	return n
}

// checkToken checks what the FSM needs of a token to store it; field
// names the command's field in messages.
func checkToken(field string, t *pb.AclToken) error {
	switch {
	case t == nil:
		return malformed("%s is required", field)
	case t.GetAccessorId() == "":
		return malformed("%s.accessor_id must not be empty", field)
	case t.GetName() == "":
		return malformed("%s.name must not be empty", field)
	case len(t.GetSecretHash()) != sha256.Size:
		return malformed("%s.secret_hash must be a SHA-256 (%d bytes), got %d bytes", field, sha256.Size, len(t.GetSecretHash()))
	}
	switch t.GetRole() {
	case pb.AclRole_ACL_ROLE_READ, pb.AclRole_ACL_ROLE_WRITE, pb.AclRole_ACL_ROLE_MANAGEMENT, pb.AclRole_ACL_ROLE_WORKER,
		pb.AclRole_ACL_ROLE_CHECKIN:
	default:
		return unknownRole(field, t.GetRole())
	}
	if r := t.GetRole(); len(t.GetSelector()) > 0 && r != pb.AclRole_ACL_ROLE_READ && r != pb.AclRole_ACL_ROLE_WRITE &&
		r != pb.AclRole_ACL_ROLE_CHECKIN {
		// A scoped management token could create an unscoped one.
		return fail(ErrInvalid, "%s.selector: only read, write and checkin tokens take a selector, not %v", field, r)
	}
	return checkWorkerBinding(field, t)
}

// checkWorkerBinding: only worker tokens are bound to pools, each named
// once. (The API checks that each is a pool name; the FSM needs only to
// tell them apart.)
func checkWorkerBinding(field string, t *pb.AclToken) error {
	if t.GetRole() != pb.AclRole_ACL_ROLE_WORKER {
		if len(t.GetPools()) > 0 || t.GetMaxConcurrency() > 0 {
			return fail(ErrInvalid, "%s.pools, max_concurrency: only worker tokens take them, not %v", field, t.GetRole())
		}
		return nil
	}
	seen := make(map[string]bool, len(t.GetPools()))
	for _, p := range t.GetPools() {
		if p == "" {
			return fail(ErrInvalid, "%s.pools: a pool without a name", field)
		}
		if seen[p] {
			return fail(ErrInvalid, "%s.pools: %q given twice", field, p)
		}
		seen[p] = true
	}
	return nil
}

func unknownRole(field string, role pb.AclRole) error {
	return malformed("%s.role must be MANAGEMENT, WRITE, READ or WORKER, not %v", field, role)
}

// bootstrapACL stores the first management token, once per cluster.
func bootstrapACL(s *state, c *pb.Command, e entry) (outcome, error) {
	t := c.GetBootstrapAcl().GetToken()
	if err := checkToken("bootstrap_acl.token", t); err != nil {
		return outcome{}, err
	}
	if t.GetRole() != pb.AclRole_ACL_ROLE_MANAGEMENT {
		return outcome{}, malformed("bootstrap_acl.token.role must be MANAGEMENT, not %v", t.GetRole())
	}
	if s.acl.bootstrapped {
		return outcome{}, fail(ErrAlreadyExists, "ACLs are bootstrapped already: bootstrap works once")
	}
	if err := s.acl.checkUnique(t); err != nil {
		return outcome{}, err
	}
	s.acl.bootstrapped = true
	stored := storedToken(t, e)
	s.acl.put(stored)
	s.tx.touch()
	return outcome{changed: true, created: true, token: stored}, nil
}

func createACLToken(s *state, c *pb.Command, e entry) (outcome, error) {
	cr := c.GetCreateAclToken()
	t := cr.GetToken()
	if err := checkToken("create_acl_token.token", t); err != nil {
		return outcome{}, err
	}
	if t.GetRole() == pb.AclRole_ACL_ROLE_CHECKIN && !s.atLeast(version3) {
		// Unknown to the releases before: refused as they refuse it.
		return outcome{}, unknownRole("create_acl_token.token", t.GetRole())
	}
	if t.GetRole() == pb.AclRole_ACL_ROLE_WORKER && len(t.GetPools()) == 0 && s.atLeast(version3) {
		// Version 2 made worker tokens for any pool, and applies as it did.
		return outcome{}, fail(ErrInvalid, "create_acl_token.token.pools: a worker token needs at least one pool")
	}
	ttl := cr.GetTtl()
	if ttl != nil && (!ttl.IsValid() || ttl.AsDuration() < time.Second) {
		return outcome{}, fail(ErrInvalid, "create_acl_token.ttl: at least 1s, got %v", ttl.AsDuration())
	}
	if err := s.acl.checkUnique(t); err != nil {
		return outcome{}, err
	}
	stored := storedToken(t, e)
	stored.ExpiresAt = nil
	if ttl != nil {
		stored.ExpiresAt = timestamppb.New(time.Unix(0, e.proposedAt).Add(ttl.AsDuration()).UTC())
	}
	s.acl.put(stored)
	s.tx.touch()
	return outcome{changed: true, created: true, token: stored}, nil
}

// deleteACLToken deletes a token, but never the last management token that
// does not expire: bootstrap works once, so nobody could manage ACLs
// again.
func deleteACLToken(s *state, c *pb.Command, _ entry) (outcome, error) {
	accessor := c.GetDeleteAclToken().GetAccessorId()
	if accessor == "" {
		return outcome{}, malformed("delete_acl_token.accessor_id must not be empty")
	}
	t, ok := s.acl.token(accessor)
	if !ok {
		return outcome{}, fail(ErrNotFound, "ACL token %q not found", accessor)
	}
	if t.GetRole() == pb.AclRole_ACL_ROLE_MANAGEMENT && t.GetExpiresAt() == nil && s.acl.lastingManagementTokens() == 1 {
		return outcome{}, fail(ErrInvalid, "ACL token %q is the last management token without an expiry: "+
			"create another before deleting it", accessor)
	}
	s.acl.delete(t)
	s.tx.tokensRevoked()
	return outcome{changed: true}, nil
}

// storedToken is t, decoded for this Apply and so ours, stamped with the
// proposer's clock.
func storedToken(t *pb.AclToken, e entry) *pb.AclToken {
	t.CreatedAt = e.timestamp()
	return t
}

// publicToken is a copy of a stored token for callers: without the hash.
func publicToken(t *pb.AclToken) *pb.AclToken {
	c := proto.CloneOf(t)
	c.SecretHash = nil
	return c
}

// scoped wraps a registry or run write so that a caller with a selector
// touches only jobs whose labels match it, before and after the change. A
// job or run outside the scope is answered as if it did not exist wherever
// that is an answer (update, delete, pause, resume, cancel), so a scoped
// caller learns nothing of other jobs; a create or upsert of its name can
// only say that the name is taken.
func scoped(h handler) handler {
	return func(s *state, c *pb.Command, e entry) (outcome, error) {
		if sel := c.GetCaller().GetSelector(); len(sel) > 0 {
			if err := checkScope(s, c, sel); err != nil {
				return outcome{}, err
			}
		}
		return h(s, c, e)
	}
}

func checkScope(s *state, c *pb.Command, sel map[string]string) error {
	var name string
	create := false
	switch k := c.GetKind().(type) {
	case *pb.Command_PutJob:
		spec := k.PutJob.GetSpec()
		if spec == nil {
			return nil // the handler refuses it as malformed
		}
		name = spec.GetName()
		if !SelectorMatches(spec.GetLabels(), sel) {
			return fail(ErrInvalid, "labels: job %q must carry every label of the caller's selector", name)
		}
		create = k.PutJob.GetMode() != pb.PutMode_PUT_MODE_UPDATE
	case *pb.Command_DeleteJob:
		name = k.DeleteJob.GetName()
	case *pb.Command_SetPaused:
		name = k.SetPaused.GetName()
	case *pb.Command_StartBackfill:
		name = k.StartBackfill.GetJob()
	case *pb.Command_CancelBackfill:
		name = k.CancelBackfill.GetJob()
	case *pb.Command_CancelRun:
		return checkRunScope(s, k.CancelRun.GetRunId(), sel)
	case *pb.Command_Checkin:
		name = k.Checkin.GetJob()
	default:
		return nil
	}
	j, ok := s.job(name)
	switch {
	case !ok || hasLabels(j.GetSpec(), sel):
		return nil
	case create:
		return fail(ErrAlreadyExists, "job %q already exists", name)
	default:
		return fail(ErrNotFound, "job %q not found", name)
	}
}

// checkRunScope answers a run of a job outside the scope as a missing run.
// A run whose job is gone is in no scope but the unscoped one, even once a
// job of its name is created again (history.go).
func checkRunScope(s *state, id string, sel map[string]string) error {
	r, ok := s.run(id)
	if !ok {
		return nil // the handler answers NOT_FOUND
	}
	if s.inScope(r, sel) {
		return nil
	}
	return fail(ErrNotFound, "run %q not found", id)
}

// SelectorMatches reports whether labels include every key of selector
// with its value; an empty selector matches everything.
func SelectorMatches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
