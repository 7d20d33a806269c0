package fsm_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// sealed is a secret as a proposer sends it: name, key and a stand-in
// ciphertext (the FSM never opens it).
func sealed(name, keyID, ciphertext string, labels ...string) *pb.Secret {
	s := &pb.Secret{Name: name, KeyId: keyID, Ciphertext: []byte(ciphertext)}
	if len(labels) > 0 {
		s.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			s.Labels[labels[i]] = labels[i+1]
		}
	}
	return s
}

func putSecretCmd(s *pb.Secret, expected uint64) *pb.Command {
	return &pb.Command{Kind: &pb.Command_PutSecret{PutSecret: &pb.PutSecretCommand{Secret: s, ExpectedVersion: expected}}}
}

func deleteSecretCmd(name string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_DeleteSecret{DeleteSecret: &pb.DeleteSecretCommand{Name: name}}}
}

func rotateSecretsCmd(s ...*pb.Secret) *pb.Command {
	return &pb.Command{Kind: &pb.Command_RotateSecrets{RotateSecrets: &pb.RotateSecretsCommand{Secrets: s}}}
}

func TestPutSecretVersionsAndKeepsOnlyCiphertextFromCallers(t *testing.T) {
	h := newHarness(t)
	if r := h.mustOK(as("alice", nil, putSecretCmd(sealed("db", "k1", "ct1"), 0))); !r.GetCreated() {
		t.Fatalf("first put: %v, want created", r)
	}
	created := h.now
	h.mustOK(as("bob", nil, putSecretCmd(sealed("db", "k1", "ct2", "team", "a"), 1)))
	h.mustFail(putSecretCmd(sealed("db", "k1", "ct3"), 1), codeMismatch, fsm.ErrVersionMismatch)

	got, ok := h.f.Secret("db")
	if !ok {
		t.Fatal("secret db not found")
	}
	if got.GetVersion() != 2 || got.GetCreatedBy() != "alice" || got.GetUpdatedBy() != "bob" ||
		!got.GetCreatedAt().AsTime().Equal(created) || got.GetUpdatedAt().AsTime().Equal(created) ||
		got.GetLabels()["team"] != "a" || got.GetKeyId() != "k1" {
		t.Fatalf("secret after two puts: %v", got)
	}
	if len(got.GetCiphertext()) != 0 {
		t.Fatal("Secret hands out the ciphertext")
	}
	for _, s := range h.f.Secrets(nil) {
		if len(s.GetCiphertext()) != 0 {
			t.Fatal("Secrets hands out the ciphertext")
		}
	}
	stored, err := h.f.SecretFor(&pb.JobSpec{Name: "j", Labels: map[string]string{"team": "a", "x": "y"}}, "db")
	if err != nil || string(stored.GetCiphertext()) != "ct2" {
		t.Fatalf("SecretFor a job in its scope: %v, %v", stored, err)
	}
}

func TestSecretForKeepsJobsInTheSecretsScope(t *testing.T) {
	h := newHarness(t)
	h.mustOK(putSecretCmd(sealed("prod-db", "k1", "ct", "team", "b"), 0))
	h.mustOK(createCmd(func() *pb.JobSpec { s := testSpec("theirs"); s.Labels = map[string]string{"team": "b"}; return s }()))
	h.mustOK(createCmd(func() *pb.JobSpec { s := testSpec("mine"); s.Labels = map[string]string{"team": "a"}; return s }()))

	// The scheduler reads stored specs, whose labels are in wire form.
	specs := map[string]*pb.JobSpec{}
	h.f.StoredJobs(func(j fsm.StoredJob) bool { specs[j.Job.GetSpec().GetName()] = j.Job.GetSpec(); return true })
	if _, err := h.f.SecretFor(specs["theirs"], "prod-db"); err != nil {
		t.Errorf("a job carrying the secret's labels: %v", err)
	}
	for _, tc := range []struct{ job, secret string }{{"mine", "prod-db"}, {"theirs", "gone"}} {
		_, err := h.f.SecretFor(specs[tc.job], tc.secret)
		if code := fsm.CodeOf(err); code != codeNotFound {
			t.Errorf("SecretFor(%s, %s): %v, want NOT_FOUND", tc.job, tc.secret, err)
		}
	}
}

func TestSecretWritesAreScoped(t *testing.T) {
	h := newHarness(t)
	h.mustOK(putSecretCmd(sealed("b-db", "k1", "ct", "team", "b"), 0))
	teamA := map[string]string{"team": "a"}
	h.mustFail(as("a", teamA, putSecretCmd(sealed("a-db", "k1", "ct"), 0)), codeInvalid, fsm.ErrInvalid)
	h.mustFail(as("a", teamA, putSecretCmd(sealed("b-db", "k1", "ct", "team", "a"), 0)), codeExists, fsm.ErrAlreadyExists)
	h.mustFail(as("a", teamA, deleteSecretCmd("b-db")), codeNotFound, fsm.ErrNotFound)
	h.mustFail(as("a", teamA, rotateSecretsCmd(sealed("b-db", "k2", "ct"))), codeInvalid, fsm.ErrInvalid)
	h.mustOK(as("a", teamA, putSecretCmd(sealed("a-db", "k1", "ct", "team", "a"), 0)))
	h.mustOK(as("a", teamA, deleteSecretCmd("a-db")))
	if names := secretNames(h.f.Secrets(nil)); names != "b-db" {
		t.Fatalf("secrets after the scoped writes: %s, want b-db", names)
	}
	if names := secretNames(h.f.Secrets(teamA)); names != "" {
		t.Fatalf("secrets team=a sees: %q, want none", names)
	}
}

func secretNames(ss []*pb.Secret) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.GetName()
	}
	return strings.Join(names, ",")
}

func TestDeleteAndRotateSecrets(t *testing.T) {
	h := newHarness(t)
	h.mustOK(putSecretCmd(sealed("a", "k1", "a1"), 0))
	h.mustOK(putSecretCmd(sealed("b", "k1", "b1"), 0))
	h.mustOK(putSecretCmd(sealed("b", "k2", "b2"), 0)) // version 2, put since the rotation read it
	rot := func(name string, version uint64, ct string) *pb.Secret {
		s := sealed(name, "k2", ct)
		s.Version = version
		return s
	}
	h.mustOK(rotateSecretsCmd(rot("a", 1, "a1'"), rot("b", 1, "b1'"), rot("gone", 1, "x")))
	a, _ := h.f.SecretFor(&pb.JobSpec{}, "a")
	b, _ := h.f.SecretFor(&pb.JobSpec{}, "b")
	if a.GetKeyId() != "k2" || string(a.GetCiphertext()) != "a1'" || a.GetVersion() != 1 {
		t.Errorf("a after the rotation: %v, want k2, a1', version 1", a)
	}
	if string(b.GetCiphertext()) != "b2" || b.GetVersion() != 2 {
		t.Errorf("b after a rotation of its older version: %v, want its newer value kept", b)
	}
	if r := h.mustOK(rotateSecretsCmd(rot("a", 1, "again"))); r.GetChanged() {
		t.Error("re-rotating a secret already under the key changed it")
	}

	h.mustOK(deleteSecretCmd("a"))
	h.mustFail(deleteSecretCmd("a"), codeNotFound, fsm.ErrNotFound)
	for _, c := range []*pb.Command{
		putSecretCmd(nil, 0), putSecretCmd(sealed("bad name", "k", "c"), 0), putSecretCmd(sealed("n", "", "c"), 0),
		putSecretCmd(sealed("n", "k", ""), 0), deleteSecretCmd(""), rotateSecretsCmd(sealed("n", "", "c")),
	} {
		h.mustFail(c, codeMalformed, fsm.ErrMalformed)
	}
}

func TestSecretsSurviveSnapshotsAndHashOnlyWhenPresent(t *testing.T) {
	h := newHarness(t)
	empty := h.f.StateHash()
	h.mustOK(putSecretCmd(sealed("db", "k1", "sealed-value", "team", "a"), 0))
	if h.f.StateHash() == empty {
		t.Fatal("a secret does not change the state hash")
	}
	data := persist(t, h.f)
	if n := snapshotHeader(t, h.f).GetSecretCount(); n != 1 {
		t.Fatalf("header secret_count %d, want 1", n)
	}
	if !bytes.Contains(data, []byte("sealed-value")) {
		t.Fatal("the snapshot does not carry the ciphertext")
	}
	c := fsm.New()
	if err := restore(c, data); err != nil {
		t.Fatal(err)
	}
	if c.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hash differs")
	}
	if got, _ := c.SecretFor(&pb.JobSpec{Labels: map[string]string{"team": "a"}}, "db"); string(got.GetCiphertext()) != "sealed-value" {
		t.Fatalf("restored secret: %v", got)
	}

	h.mustOK(deleteSecretCmd("db"))
	if h.f.StateHash() != empty {
		t.Fatal("a state without secrets hashes differently than before secrets existed")
	}
	// A cut snapshot is refused, not half restored.
	if err := restore(fsm.New(), data[:len(data)-3]); err == nil {
		t.Fatal("a snapshot cut inside its secret records restored")
	}
}

func TestSecretAuditRecordsNeverHoldValues(t *testing.T) {
	h := newAuditHarness(t, 100)
	h.mustOK(as("alice", nil, putSecretCmd(sealed("db", "k1", "CIPHERTEXT", "team", "a"), 0)))
	r := h.lastAudit()
	if r.GetAction() != fsm.AuditSecretPut || r.GetSecret() != "db" || r.GetPrincipal() != "alice" || r.GetVersionAfter() != 1 {
		t.Fatalf("put record %v", r)
	}
	wantChanges(t, r, `value:  → (hidden)`, `labels.team:  → "a"`, `key_id:  → "k1"`)
	h.mustOK(putSecretCmd(sealed("db", "k2", "CIPHERTEXT2"), 0))
	wantChanges(t, h.lastAudit(), `value: (hidden) → changed`, `labels.team: "a" → `, `key_id: "k1" → "k2"`)
	h.mustOK(rotateSecretsCmd(&pb.Secret{Name: "db", Version: 2, KeyId: "k3", Ciphertext: []byte("CT3")}))
	wantChanges(t, h.lastAudit(), `secrets:  → 1 re-encrypted`, `key_id:  → "k3"`)
	h.mustOK(deleteSecretCmd("db"))
	if r := h.lastAudit(); r.GetAction() != fsm.AuditSecretDelete || r.GetVersionBefore() != 2 {
		t.Fatalf("delete record %v", r)
	}
	wantChanges(t, h.lastAudit(), `value: (hidden) → `, `key_id: "k3" → `)
	if bytes.Contains(persist(t, h.f), []byte("CIPHERTEXT")) {
		t.Fatal("the audit trail keeps a ciphertext of a deleted secret")
	}
}

func TestVersionOfSecretCommands(t *testing.T) {
	if fsm.CommandVersion != 3 {
		t.Fatalf("CommandVersion = %d, want 3", fsm.CommandVersion)
	}
	for _, c := range []*pb.Command{putSecretCmd(sealed("a", "k", "c"), 0), deleteSecretCmd("a"), rotateSecretsCmd()} {
		if v := fsm.VersionOf(c); v != 3 {
			t.Errorf("VersionOf(%v) = %d, want 3", c, v)
		}
	}
}

func TestAuditDiffShowsReferencesAndHidesCredentials(t *testing.T) {
	h := newAuditHarness(t, 100)
	spec := testSpec("billing")
	spec.Http.Url = "https://user:pa55@billing.test/run"
	spec.Http.Headers["Authorization"] = "Bearer literal"
	h.mustOK(createCmd(spec))
	for _, c := range h.lastAudit().GetChanges() {
		if strings.Contains(c.GetAfter(), "pa55") || strings.Contains(c.GetAfter(), "literal") {
			t.Fatalf("create record shows a credential: %v", c)
		}
	}

	next := cloneSpec(spec)
	next.Http.Url = "https://user:other@billing.test/run"
	next.Http.Headers["Authorization"] = "Bearer ${secret:billing-token}"
	h.mustOK(updateCmd(next, 0))
	wantChanges(t, h.lastAudit(),
		`http.url: "https://(hidden)@billing.test/run" → changed`,
		`http.headers.Authorization: (hidden) → "Bearer ${secret:billing-token}"`,
	)

	worker := cloneSpec(next)
	worker.Http = nil
	worker.Worker = &pb.WorkerTarget{Pool: "p", Command: []string{"/bin/true"}, Env: map[string]string{"KEY": "w0rker"}}
	h.mustOK(updateCmd(worker, 0))
	for _, c := range h.lastAudit().GetChanges() {
		if strings.Contains(c.GetAfter(), "w0rker") || strings.Contains(c.GetBefore(), "other") {
			t.Fatalf("update record shows a credential: %v", c)
		}
	}
}

// TestUserRestoreKeepsTheLiveSecrets: a restore rolls jobs back to the
// file, never the secret store: a secret deleted since stays deleted, one
// re-encrypted since keeps its key, one put since stays.
func TestUserRestoreKeepsTheLiveSecrets(t *testing.T) {
	h := newHarness(t)
	h.mustOK(putSecretCmd(sealed("deleted-since", "k1", "a"), 0))
	h.mustOK(putSecretCmd(sealed("rotated-since", "k1", "b"), 0))
	h.mustOK(createCmd(testSpec("nightly")))
	file := persist(t, h.f)

	h.mustOK(deleteSecretCmd("deleted-since"))
	h.mustOK(rotateSecretsCmd(&pb.Secret{Name: "rotated-since", Version: 1, KeyId: "k2", Ciphertext: []byte("b'")}))
	h.mustOK(putSecretCmd(sealed("put-since", "k2", "c"), 0))
	live := h.f.SealedSecrets()

	userRestore(t, h.f, file, fsm.RestoreRecord{Principal: "ops"})
	got := h.f.SealedSecrets()
	if len(got) != len(live) {
		t.Fatalf("secrets after the restore: %v, want the live ones %v", got, live)
	}
	for i := range got {
		if !proto.Equal(got[i], live[i]) {
			t.Errorf("secret %d after the restore: %v, want %v", i, got[i], live[i])
		}
	}
}
