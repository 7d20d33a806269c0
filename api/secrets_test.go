package api

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// testKeys is a keyring of the test keys seeds..., the first sealing.
func testKeys(t *testing.T, seeds ...byte) *secret.Keyring {
	t.Helper()
	keys := make([][]byte, len(seeds))
	for i, s := range seeds {
		keys[i] = bytes.Repeat([]byte{s}, secret.KeySize)
	}
	k, err := secret.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func putSecret(ctx context.Context, h *aclHarness, name, value string, labels map[string]string) error {
	_, err := h.secrets.PutSecret(ctx, &pb.PutSecretRequest{Name: name, Value: []byte(value), Labels: labels})
	return err
}

// TestSecretMethodsByRole: put and delete need write in the secret's
// scope, list needs read, rotate management; no answer holds a value.
func TestSecretMethodsByRole(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	write := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)
	teamA := h.token(t, mgmt, "team-a", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "a"})

	wantCode(t, putSecret(ctx, h, "db", "hunter2", nil), codes.Unauthenticated)
	wantCode(t, putSecret(with(ctx, read), h, "db", "hunter2", nil), codes.PermissionDenied)
	wantCode(t, putSecret(with(ctx, worker), h, "db", "hunter2", nil), codes.PermissionDenied)
	if err := putSecret(with(ctx, write), h, "db", "hunter2", nil); err != nil {
		t.Fatalf("write token putting a secret: %v", err)
	}
	if err := putSecret(with(ctx, mgmt), h, "b-db", "b-value", map[string]string{"team": "b"}); err != nil {
		t.Fatalf("management putting a secret: %v", err)
	}

	// The scope: labels must carry the token's selector, and secrets
	// outside it are neither listed nor deletable.
	wantCode(t, putSecret(with(ctx, teamA), h, "a-db", "a-value", nil), codes.PermissionDenied)
	if err := putSecret(with(ctx, teamA), h, "a-db", "a-value", map[string]string{"team": "a"}); err != nil {
		t.Fatalf("team=a putting a secret in its scope: %v", err)
	}
	_, err := h.secrets.DeleteSecret(with(ctx, teamA), &pb.DeleteSecretRequest{Name: "b-db"})
	wantCode(t, err, codes.NotFound)

	for tok, want := range map[string]string{read: "a-db,b-db,db", teamA: "a-db"} {
		resp, err := h.secrets.ListSecrets(with(ctx, tok), &pb.ListSecretsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range resp.GetSecrets() {
			names = append(names, s.GetName())
			if len(s.GetCiphertext()) > 0 || s.GetVersion() != 1 || s.GetKeyId() == "" || s.GetCreatedBy() == "" {
				t.Errorf("listed secret %v: want version, key and author, no ciphertext", s)
			}
		}
		if got := strings.Join(names, ","); got != want {
			t.Errorf("ListSecrets: %s, want %s", got, want)
		}
	}
	_, err = h.secrets.ListSecrets(with(ctx, worker), &pb.ListSecretsRequest{})
	wantCode(t, err, codes.PermissionDenied)

	_, err = h.secrets.RotateSecrets(with(ctx, write), &pb.RotateSecretsRequest{})
	wantCode(t, err, codes.PermissionDenied)
	if _, err := h.secrets.RotateSecrets(with(ctx, mgmt), &pb.RotateSecretsRequest{}); err != nil {
		t.Fatalf("management rotating: %v", err)
	}
	_, err = h.secrets.DeleteSecret(with(ctx, read), &pb.DeleteSecretRequest{Name: "db"})
	wantCode(t, err, codes.PermissionDenied)
	if _, err := h.secrets.DeleteSecret(with(ctx, write), &pb.DeleteSecretRequest{Name: "db"}); err != nil {
		t.Fatalf("write token deleting a secret: %v", err)
	}

	for _, entry := range h.store.entries {
		for _, v := range []string{"hunter2", "a-value", "b-value"} {
			if bytes.Contains(entry, []byte(v)) {
				t.Fatalf("a log entry holds the value %q in clear", v)
			}
		}
	}
}

func TestPutSecretChecksTheRequest(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	for _, tc := range []struct {
		req   *pb.PutSecretRequest
		field string
	}{
		{&pb.PutSecretRequest{Value: []byte("v")}, "name"},
		{&pb.PutSecretRequest{Name: "a b", Value: []byte("v")}, "name"},
		{&pb.PutSecretRequest{Name: "a"}, "value"},
		{&pb.PutSecretRequest{Name: "a", Value: make([]byte, secret.MaxValue+1)}, "value"},
		{&pb.PutSecretRequest{Name: "a", Value: []byte("v"), Labels: map[string]string{"": "x"}}, "labels"},
	} {
		_, err := h.secrets.PutSecret(ctx, tc.req)
		st := wantCode(t, err, codes.InvalidArgument)
		if fields := badRequestFields(t, st); !slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, tc.field) }) {
			t.Errorf("PutSecret(%s): fields %v, want %s", st.Message(), fields, tc.field)
		}
	}
	if len(h.store.f.Secrets(nil)) != 0 {
		t.Fatal("a refused put stored a secret")
	}
}

func TestPutSecretWithoutKeysIsRefused(t *testing.T) {
	state := fsm.New()
	svc := NewSecretService(Deps{Store: &fsmStore{f: state}, Secrets: state})
	_, err := svc.PutSecret(testCtx(t), &pb.PutSecretRequest{Name: "a", Value: []byte("v")})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "--secrets-key-file") {
		t.Errorf("refusal %q: want it to name --secrets-key-file", st.Message())
	}
}

// TestJobsReferenceSecretsThatResolve: a reference must name a secret the
// caller sees and whose labels the job carries; a referenced secret is
// deleted only with force.
func TestJobsReferenceSecretsThatResolve(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	teamA := h.token(t, mgmt, "team-a", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "a"})

	spec := labelled("billing", map[string]string{"team": "a"})
	spec.Http.Headers = map[string]string{"Authorization": "Bearer ${secret:api-token}"}
	_, err := h.jobs.ApplyJob(with(ctx, mgmt), &pb.ApplyJobRequest{Spec: spec})
	st := wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"http.headers.Authorization"}) ||
		!strings.Contains(st.Message(), `secret "api-token" not found`) {
		t.Fatalf("a reference to a missing secret: %v, fields %v", st.Message(), fields)
	}

	// A secret of team b: team a's token cannot see it, and a job of team
	// a may not use it even written by management.
	if err := putSecret(with(ctx, mgmt), h, "api-token", "t0k3n", map[string]string{"team": "b"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.jobs.ApplyJob(with(ctx, teamA), &pb.ApplyJobRequest{Spec: spec})
	if st := wantCode(t, err, codes.InvalidArgument); !strings.Contains(st.Message(), "not found") {
		t.Fatalf("team a referencing team b's secret: %v, want it not found", st.Message())
	}
	_, err = h.jobs.ApplyJob(with(ctx, mgmt), &pb.ApplyJobRequest{Spec: spec})
	if st := wantCode(t, err, codes.InvalidArgument); !strings.Contains(st.Message(), "team=b") {
		t.Fatalf("a team=a job referencing a team=b secret: %v, want the labels named", st.Message())
	}

	if err := putSecret(with(ctx, teamA), h, "api-token-a", "t0k3n-a", map[string]string{"team": "a"}); err != nil {
		t.Fatal(err)
	}
	spec.Http.Headers["Authorization"] = "Bearer ${secret:api-token-a}"
	if _, err := h.jobs.ApplyJob(with(ctx, teamA), &pb.ApplyJobRequest{Spec: spec}); err != nil {
		t.Fatalf("a job referencing a secret of its scope: %v", err)
	}
	_, err = h.jobs.ApplyJobs(with(ctx, mgmt), &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{
		validSpec("ok"), func() *pb.JobSpec { s := validSpec("bad"); s.Http.Body = "${secret:nope}"; return s }(),
	}})
	if st := wantCode(t, err, codes.InvalidArgument); !slices.Equal(badRequestFields(t, st), []string{"specs[1].http.body"}) {
		t.Fatalf("ApplyJobs with a missing secret: %v", st.Message())
	}

	_, err = h.secrets.DeleteSecret(with(ctx, teamA), &pb.DeleteSecretRequest{Name: "api-token-a"})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "billing") {
		t.Fatalf("deleting a referenced secret: %v, want the job named", st.Message())
	}
	resp, err := h.secrets.DeleteSecret(with(ctx, teamA), &pb.DeleteSecretRequest{Name: "api-token-a", Force: true})
	if err != nil || !slices.Equal(resp.GetReferencedBy(), []string{"billing"}) {
		t.Fatalf("forced delete: %v, %v", resp, err)
	}
}

// TestReadTokensSeeNoSecretValues: literal values of the secret-bearing
// fields read "<redacted>" for read tokens, references read as written,
// and write and management tokens get everything back.
func TestReadTokensSeeNoSecretValues(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	write := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
	if err := putSecret(with(ctx, mgmt), h, "pw", "p4ss", nil); err != nil {
		t.Fatal(err)
	}
	webhook := validSpec("webhook")
	webhook.Http = &pb.HttpTarget{
		Url:     "https://user:literal-pw@billing.internal/run",
		Headers: map[string]string{"Authorization": "Bearer literal-token", "X-Ref": "Basic ${secret:pw}", "X-Empty": ""},
		Body:    `{"key":"literal-body"}`,
	}
	remote := validSpec("remote")
	remote.Http = nil
	remote.Worker = &pb.WorkerTarget{Pool: "p", Command: []string{"/bin/true"}, Env: map[string]string{"KEY": "literal-env", "REF": "${secret:pw}"}}
	for _, s := range []*pb.JobSpec{webhook, remote} {
		if _, err := h.jobs.ApplyJob(with(ctx, mgmt), &pb.ApplyJobRequest{Spec: s}); err != nil {
			t.Fatal(err)
		}
	}
	literals := []string{"literal-pw", "literal-token", "literal-body", "literal-env", "p4ss"}
	get := func(tok, name string) *pb.JobSpec {
		resp, err := h.jobs.GetJob(with(ctx, tok), &pb.GetJobRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetJob().GetSpec()
	}
	list := func(tok string) []*pb.JobSpec {
		resp, err := h.jobs.ListJobs(with(ctx, tok), &pb.ListJobsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var specs []*pb.JobSpec
		for _, j := range resp.GetJobs() {
			specs = append(specs, j.GetSpec())
		}
		return specs
	}

	for _, spec := range append(list(read), get(read, "webhook"), get(read, "remote")) {
		text := spec.String()
		for _, v := range literals {
			if strings.Contains(text, v) {
				t.Errorf("a read token sees %q in %s", v, text)
			}
		}
	}
	w, r := get(read, "webhook"), get(read, "remote")
	if got := w.GetHttp(); got.GetUrl() != "https://<redacted>@billing.internal/run" || got.GetBody() != "<redacted>" ||
		got.GetHeaders()["Authorization"] != "<redacted>" || got.GetHeaders()["X-Ref"] != "Basic ${secret:pw}" ||
		got.GetHeaders()["X-Empty"] != "" {
		t.Errorf("webhook as a read token sees it: %v", got)
	}
	if env := r.GetWorker().GetEnv(); env["KEY"] != "<redacted>" || env["REF"] != "${secret:pw}" {
		t.Errorf("worker env as a read token sees it: %v", env)
	}

	for _, tok := range []string{write, mgmt} {
		for _, spec := range []*pb.JobSpec{get(tok, "webhook"), get(tok, "remote")} {
			want := webhook
			if spec.GetName() == "remote" {
				want = remote
			}
			if spec.GetHttp().GetUrl() != want.GetHttp().GetUrl() || spec.GetHttp().GetBody() != want.GetHttp().GetBody() ||
				spec.GetHttp().GetHeaders()["Authorization"] != want.GetHttp().GetHeaders()["Authorization"] ||
				spec.GetWorker().GetEnv()["KEY"] != want.GetWorker().GetEnv()["KEY"] {
				t.Errorf("%s as a write or management token: %v, want it as written", spec.GetName(), spec)
			}
		}
	}
}

// TestRotateSecretsReseals: a node whose first key is new re-seals every
// secret under it, and what it re-sealed still opens to the same value.
func TestRotateSecretsReseals(t *testing.T) {
	state := fsm.New()
	store := &fsmStore{f: state}
	if _, err := store.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	old := NewSecretService(Deps{Store: store, Secrets: state, SecretKeys: testKeys(t, 1)})
	ctx := testCtx(t)
	for _, name := range []string{"a", "b"} {
		if _, err := old.PutSecret(ctx, &pb.PutSecretRequest{Name: name, Value: []byte("value-" + name)}); err != nil {
			t.Fatal(err)
		}
	}
	rotating := testKeys(t, 2, 1)
	resp, err := NewSecretService(Deps{Store: store, Secrets: state, SecretKeys: rotating}).RotateSecrets(ctx, &pb.RotateSecretsRequest{})
	if err != nil || resp.GetRotated() != 2 || resp.GetUnchanged() != 0 || resp.GetKeyId() != rotating.Primary() {
		t.Fatalf("RotateSecrets: %v, %v", resp, err)
	}
	after := testKeys(t, 2)
	for _, sc := range state.SealedSecrets() {
		v, err := after.Open(sc.GetName(), sc.GetKeyId(), sc.GetCiphertext())
		if err != nil || string(v) != "value-"+sc.GetName() || sc.GetVersion() != 1 {
			t.Errorf("secret %s after the rotation: %q, %v, version %d", sc.GetName(), v, err, sc.GetVersion())
		}
	}
	// A node that lacks the old key says which it needs.
	_, err = NewSecretService(Deps{Store: store, Secrets: state, SecretKeys: testKeys(t, 3)}).RotateSecrets(ctx, &pb.RotateSecretsRequest{})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), after.Primary()) {
		t.Fatalf("rotating without the key in use: %v, want it named", st.Message())
	}
}
