package fsm_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const codeInvalid = pb.ResultCode_RESULT_CODE_INVALID

func secretHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// aclToken is a token whose accessor and secret derive from its name.
func aclToken(name string, role pb.AclRole, selector map[string]string) *pb.AclToken {
	return &pb.AclToken{
		AccessorId: "acc-" + name, Name: name, Role: role, Selector: selector,
		SecretHash: secretHash("secret-" + name),
	}
}

func bootstrapCmd(t *pb.AclToken) *pb.Command {
	return &pb.Command{Kind: &pb.Command_BootstrapAcl{BootstrapAcl: &pb.BootstrapAclCommand{Token: t}}}
}

func createTokenCmd(t *pb.AclToken) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CreateAclToken{CreateAclToken: &pb.CreateAclTokenCommand{Token: t}}}
}

func deleteTokenCmd(accessor string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_DeleteAclToken{DeleteAclToken: &pb.DeleteAclTokenCommand{AccessorId: accessor}}}
}

// as makes c a command of principal, scoped to selector.
func as(principal string, selector map[string]string, c *pb.Command) *pb.Command {
	c.Caller = &pb.Caller{Principal: principal, Selector: selector}
	return c
}

func TestBootstrapACLWorksOnce(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	r := h.mustFail(bootstrapCmd(aclToken("again", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)), codeExists, fsm.ErrAlreadyExists)
	if !strings.Contains(r.GetMessage(), "bootstrapped already") {
		t.Fatalf("second bootstrap says %q, want it to say ACLs are bootstrapped already", r.GetMessage())
	}
	// Not even once every first token is gone.
	h.mustOK(createTokenCmd(aclToken("ops", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.mustOK(deleteTokenCmd("acc-root"))
	h.mustFail(bootstrapCmd(aclToken("again", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)), codeExists, fsm.ErrAlreadyExists)
}

func TestACLTokenIsFoundByItsSecretHashOnly(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.mustOK(createTokenCmd(aclToken("billing-ci", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "billing"})))
	created := h.now

	got, ok := h.f.ACLToken(secretHash("secret-billing-ci"))
	if !ok {
		t.Fatal("the token is not found by its secret's hash")
	}
	want := &pb.AclToken{AccessorId: "acc-billing-ci", Name: "billing-ci", Role: pb.AclRole_ACL_ROLE_WRITE,
		Selector: map[string]string{"team": "billing"}}
	if got.GetSecretHash() != nil || !got.GetCreatedAt().AsTime().Equal(created) {
		t.Fatalf("token %v: want no hash and created_at %v (the proposer's clock)", got, created)
	}
	got.CreatedAt = nil
	if !proto.Equal(got, want) {
		t.Fatalf("ACLToken = %v, want %v", got, want)
	}
	if _, ok := h.f.ACLToken(secretHash("secret-nobody")); ok {
		t.Fatal("an unknown secret found a token")
	}
	list := h.f.ACLTokens()
	if len(list) != 2 || list[0].GetName() != "billing-ci" || list[1].GetName() != "root" {
		t.Fatalf("ACLTokens = %v, want billing-ci then root", list)
	}
	for _, tok := range list {
		if tok.GetSecretHash() != nil {
			t.Fatalf("ACLTokens hands out the hash of %q", tok.GetName())
		}
	}
}

func TestCreateACLTokenRefusesTakenAccessorNameOrSecret(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_READ, nil)))
	sameAccessor := aclToken("other", pb.AclRole_ACL_ROLE_READ, nil)
	sameAccessor.AccessorId = "acc-ci"
	sameName := aclToken("ci", pb.AclRole_ACL_ROLE_READ, nil)
	sameName.AccessorId = "acc-2"
	sameName.SecretHash = secretHash("fresh")
	sameSecret := aclToken("third", pb.AclRole_ACL_ROLE_READ, nil)
	sameSecret.SecretHash = secretHash("secret-ci")
	for what, tok := range map[string]*pb.AclToken{"accessor": sameAccessor, "name": sameName, "secret": sameSecret} {
		r := h.mustFail(createTokenCmd(tok), codeExists, fsm.ErrAlreadyExists)
		if !strings.Contains(r.GetMessage(), what) {
			t.Errorf("duplicate %s refused with %q, which does not name it", what, r.GetMessage())
		}
	}
}

func TestACLCommandsWithBadContentChangeNothing(t *testing.T) {
	mod := func(f func(*pb.AclToken)) *pb.AclToken {
		tok := aclToken("x", pb.AclRole_ACL_ROLE_READ, nil)
		f(tok)
		return tok
	}
	cases := []struct {
		name     string
		cmd      *pb.Command
		code     pb.ResultCode
		mentions string
	}{
		{"create without token", createTokenCmd(nil), codeMalformed, "create_acl_token.token is required"},
		{"no accessor", createTokenCmd(mod(func(t *pb.AclToken) { t.AccessorId = "" })), codeMalformed, "accessor_id"},
		{"no name", createTokenCmd(mod(func(t *pb.AclToken) { t.Name = "" })), codeMalformed, "name"},
		{"short hash", createTokenCmd(mod(func(t *pb.AclToken) { t.SecretHash = []byte("abc") })), codeMalformed, "secret_hash"},
		{"no role", createTokenCmd(mod(func(t *pb.AclToken) { t.Role = 0 })), codeMalformed, "role"},
		{"unknown role", createTokenCmd(mod(func(t *pb.AclToken) { t.Role = 99 })), codeMalformed, "role"},
		{"scoped management", createTokenCmd(mod(func(t *pb.AclToken) {
			t.Role, t.Selector = pb.AclRole_ACL_ROLE_MANAGEMENT, map[string]string{"team": "a"}
		})), codeInvalid, "selector"},
		{"scoped worker", createTokenCmd(mod(func(t *pb.AclToken) {
			t.Role, t.Selector = pb.AclRole_ACL_ROLE_WORKER, map[string]string{"team": "a"}
		})), codeInvalid, "selector"},
		{"bootstrap of a read token", bootstrapCmd(aclToken("r", pb.AclRole_ACL_ROLE_READ, nil)), codeMalformed, "MANAGEMENT"},
		{"delete without accessor", deleteTokenCmd(""), codeMalformed, "accessor_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			sentinel := fsm.ErrMalformed
			if tc.code == codeInvalid {
				sentinel = fsm.ErrInvalid
			}
			r := h.mustFail(tc.cmd, tc.code, sentinel)
			if !strings.Contains(r.GetMessage(), tc.mentions) {
				t.Fatalf("message %q does not mention %q", r.GetMessage(), tc.mentions)
			}
		})
	}
}

func TestDeleteACLToken(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.mustOK(createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_WRITE, nil)))

	h.mustFail(deleteTokenCmd("acc-nobody"), codeNotFound, fsm.ErrNotFound)
	r := h.mustFail(deleteTokenCmd("acc-root"), codeInvalid, fsm.ErrInvalid)
	if !strings.Contains(r.GetMessage(), "last management token") {
		t.Fatalf("deleting the last management token refused with %q, want it to say why", r.GetMessage())
	}
	h.mustOK(deleteTokenCmd("acc-ci"))
	if _, ok := h.f.ACLToken(secretHash("secret-ci")); ok {
		t.Fatal("a deleted token's secret still finds it")
	}
	// Its name and secret are free again.
	h.mustOK(createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_WRITE, nil)))
}

func TestScopedCallerTouchesOnlyJobsInItsScope(t *testing.T) {
	billing := map[string]string{"team": "billing"}
	h := newHarness(t)
	other := testSpec("payroll")
	other.Labels = map[string]string{"team": "hr"}
	h.mustOK(createCmd(other))
	h.mustOK(createCmd(testSpec("invoices"))) // team=billing

	outside := testSpec("audit")
	outside.Labels = map[string]string{"team": "hr"}
	h.mustFail(as("ci", billing, createCmd(outside)), codeInvalid, fsm.ErrInvalid)

	// A job outside the scope looks missing where that is an answer...
	inScope := cloneSpec(other)
	inScope.Labels = billing
	h.mustFail(as("ci", billing, updateCmd(inScope, 0)), codeNotFound, fsm.ErrNotFound)
	h.mustFail(as("ci", billing, deleteCmd("payroll", 0)), codeNotFound, fsm.ErrNotFound)
	h.mustFail(as("ci", billing, pauseCmd("payroll", true, "")), codeNotFound, fsm.ErrNotFound)
	// ... and taken where its name is asked for.
	h.mustFail(as("ci", billing, upsertCmd(inScope)), codeExists, fsm.ErrAlreadyExists)
	h.mustFail(as("ci", billing, createCmd(inScope)), codeExists, fsm.ErrAlreadyExists)

	// A job in scope cannot be moved out of it.
	moved := testSpec("invoices")
	moved.Labels = map[string]string{"team": "hr"}
	h.mustFail(as("ci", billing, updateCmd(moved, 0)), codeInvalid, fsm.ErrInvalid)

	// Inside the scope everything works; extra labels are fine.
	spec := testSpec("invoices")
	spec.Labels = map[string]string{"team": "billing", "tier": "1"}
	h.mustOK(as("ci", billing, updateCmd(spec, 0)))
	h.mustOK(as("ci", billing, pauseCmd("invoices", true, "")))
	h.mustOK(as("ci", billing, deleteCmd("invoices", 0)))
	h.mustOK(as("ci", billing, createCmd(testSpec("invoices"))))
}

func TestWritesRecordTheirPrincipal(t *testing.T) {
	h := newHarness(t)
	h.mustOK(as("alice", nil, createCmd(testSpec("billing"))))
	if by := h.job("billing").GetUpdatedBy(); by != "alice" {
		t.Fatalf("created job updated_by %q, want alice", by)
	}
	h.mustOK(as("bob", nil, pauseCmd("billing", true, "incident")))
	if by := h.job("billing").GetUpdatedBy(); by != "bob" {
		t.Fatalf("paused job updated_by %q, want bob", by)
	}
	// A write that changes nothing is nobody's change.
	spec := h.job("billing").GetSpec()
	h.mustOK(as("carol", nil, upsertCmd(spec)))
	if by := h.job("billing").GetUpdatedBy(); by != "bob" {
		t.Fatalf("no-op upsert made updated_by %q, want bob still", by)
	}
	spec = cloneSpec(spec)
	spec.Schedule = "@daily"
	h.mustOK(as("carol", nil, updateCmd(spec, 0)))
	if by := h.job("billing").GetUpdatedBy(); by != "carol" {
		t.Fatalf("updated job updated_by %q, want carol", by)
	}

	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if j, _ := restored.Job("billing"); j.GetUpdatedBy() != "carol" {
		t.Fatalf("after a snapshot round trip updated_by is %q, want carol", j.GetUpdatedBy())
	}
}

func TestACLSnapshotRoundTrip(t *testing.T) {
	h := populated(t)
	withoutACL := h.f.StateHash()
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	if h.f.StateHash() == withoutACL {
		t.Fatal("a token is not part of the state hash")
	}
	h.mustOK(createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "billing"})))
	h.mustOK(createTokenCmd(aclToken("viewer", pb.AclRole_ACL_ROLE_READ, nil)))

	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if restored.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hash differs")
	}
	if got, ok := restored.ACLToken(secretHash("secret-ci")); !ok || got.GetSelector()["team"] != "billing" {
		t.Fatalf("restored lookup of ci: %v, %v", got, ok)
	}
	// The bootstrap flag came along, and so did the name index.
	r := newHarness(t)
	r.f, r.index = restored, h.index
	r.mustFail(bootstrapCmd(aclToken("again", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)), codeExists, fsm.ErrAlreadyExists)
	dup := aclToken("viewer", pb.AclRole_ACL_ROLE_READ, nil)
	dup.AccessorId, dup.SecretHash = "acc-new", secretHash("new")
	r.mustFail(createTokenCmd(dup), codeExists, fsm.ErrAlreadyExists)
}

func TestSnapshotWithoutACLRecordsStillRestores(t *testing.T) {
	// A snapshot written before tokens existed: its header has no token
	// count and nothing follows the runs.
	f := fsm.New()
	if err := restore(f, stream(t, header(3, 1, 0), jobRecord("alpha", 1))); err != nil {
		t.Fatalf("Restore of a snapshot without ACL records: %v", err)
	}
	if len(f.ACLTokens()) != 0 {
		t.Fatal("tokens appeared from nowhere")
	}
	h := newHarness(t)
	h.f = f
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
}

func TestRestoreRejectsBadACLRecords(t *testing.T) {
	tokenRecord := func(tok *pb.AclToken) *pb.SnapshotRecord {
		return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_AclToken{AclToken: tok}}
	}
	withTokens := func(n uint64) *pb.SnapshotHeader {
		h := header(0, 0, 0)
		h.AclTokenCount = n
		return h
	}
	a, b := aclToken("a", pb.AclRole_ACL_ROLE_READ, nil), aclToken("b", pb.AclRole_ACL_ROLE_READ, nil)
	sameName := aclToken("a", pb.AclRole_ACL_ROLE_READ, nil)
	sameName.AccessorId, sameName.SecretHash = "acc-z", secretHash("z")
	cases := map[string][]byte{
		"missing token":      stream(t, withTokens(2), tokenRecord(a)),
		"out of order":       stream(t, withTokens(2), tokenRecord(b), tokenRecord(a)),
		"duplicate name":     stream(t, withTokens(2), tokenRecord(a), tokenRecord(sameName)),
		"not a token":        stream(t, withTokens(1), jobRecord("alpha", 1)),
		"malformed token":    stream(t, withTokens(1), tokenRecord(&pb.AclToken{AccessorId: "x", Name: "x"})),
		"token not declared": stream(t, withTokens(0), tokenRecord(a)),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			f := fsm.New()
			if err := restore(f, data); err == nil {
				t.Fatal("Restore accepted it")
			}
		})
	}
}

// TestACLCommandsAreDeterministic applies one log of ACL and scoped
// registry commands to two FSMs, and a snapshot of the first to a third.
func TestACLCommandsAreDeterministic(t *testing.T) {
	billing := map[string]string{"team": "billing"}
	log := []*pb.Command{
		bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)),
		as("root", nil, createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_WRITE, billing))),
		as("ci", billing, createCmd(testSpec("invoices"))),
		bootstrapCmd(aclToken("again", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)),
		as("root", nil, createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_READ, nil))),
		as("root", nil, deleteTokenCmd("acc-root")),
		as("root", nil, createTokenCmd(aclToken("viewer", pb.AclRole_ACL_ROLE_READ, nil))),
		as("root", nil, deleteTokenCmd("acc-viewer")),
		as("ci", billing, pauseCmd("invoices", true, "")),
	}
	a, b := fsm.New(), fsm.New()
	for i, c := range log {
		c.ProposedAtUnixNano = baseTime.UnixNano() + int64(i)
		data, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		l := &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}
		if ra, rb := applyLog(t, a, l), applyLog(t, b, l); !proto.Equal(ra, rb) {
			t.Fatalf("entry %d: results differ: %v vs %v", i+1, ra, rb)
		}
		if a.StateHash() != b.StateHash() {
			t.Fatalf("entry %d: state hashes differ", i+1)
		}
	}
	c := fsm.New()
	if err := restore(c, persist(t, a)); err != nil || c.StateHash() != a.StateHash() {
		t.Fatalf("restored copy: %v, equal hash %v", err, c.StateHash() == a.StateHash())
	}
}

func TestVersionOfACLCommands(t *testing.T) {
	if fsm.CommandVersion < 2 {
		t.Fatalf("CommandVersion = %d, want at least 2", fsm.CommandVersion)
	}
	for _, c := range []*pb.Command{bootstrapCmd(nil), createTokenCmd(nil), deleteTokenCmd("x"),
		createTokenCmd(aclToken("w", pb.AclRole_ACL_ROLE_WORKER, nil))} {
		if v := fsm.VersionOf(c); v != 2 {
			t.Errorf("VersionOf(%v) = %d, want 2", c, v)
		}
	}
	for _, c := range []*pb.Command{createCmd(testSpec("a")), deleteCmd("a", 0), pauseCmd("a", true, ""), {}} {
		if v := fsm.VersionOf(c); v != 1 {
			t.Errorf("VersionOf(%v) = %d, want 1", c, v)
		}
	}
}
