package scheduler

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/secret"
)

func testKeyring(t *testing.T) *secret.Keyring {
	t.Helper()
	k, err := secret.NewKeyring(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func withSecrets(keys *secret.Keyring) harnessOpt {
	return func(c *Config) { c.Secrets, c.SecretKeys = c.State.(SecretStore), keys }
}

// putSecret stores value under name, sealed with keys, as the API does.
func (h *harness) putSecret(keys *secret.Keyring, name, value string) {
	h.t.Helper()
	id, sealed, err := keys.Seal(name, []byte(value))
	if err != nil {
		h.t.Fatal(err)
	}
	h.apply(&pb.Command{Kind: &pb.Command_PutSecret{PutSecret: &pb.PutSecretCommand{
		Secret: &pb.Secret{Name: name, KeyId: id, Ciphertext: sealed},
	}}})
}

func (h *harness) trigger(job, request string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := h.s.Trigger(ctx, &pb.Fire{Job: job, RequestId: request}); err != nil || !res.GetAccepted() {
		h.t.Fatalf("trigger %s: %v, %v", job, res, err)
	}
	h.settle()
}

// TestWebhookGetsItsSecretFilledIn: the leader fills in the reference as
// it dispatches; the stored spec keeps the reference, and a new value
// reaches the next attempt.
func TestWebhookGetsItsSecretFilledIn(t *testing.T) {
	var mu sync.Mutex
	var got []string
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+" "+r.URL.Query().Get("key"))
		mu.Unlock()
	}))
	defer downstream.Close()
	keys := testKeyring(t)
	h := newHarness(t, withExecutor(realExecutor()), withSecrets(keys))
	h.putSecret(keys, "token", "t0k3n")
	s := spec("hook", "@every 1h")
	s.Http = &pb.HttpTarget{Url: downstream.URL + "/?key=${secret:token}", Method: "POST",
		Headers: map[string]string{"Authorization": "Bearer ${secret:token}"}}
	h.putJob(s)
	h.lead()
	h.trigger("hook", "r1")
	h.putSecret(keys, "token", "n3w")
	h.trigger("hook", "r2")
	h.waitFor("two requests", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if got[0] != "Bearer t0k3n t0k3n" || got[1] != "Bearer n3w n3w" {
		t.Fatalf("the downstream got %q, want the first value then the new one", got)
	}
	j, _ := h.fsm.Job("hook")
	if j.GetSpec().GetHttp().GetHeaders()["Authorization"] != "Bearer ${secret:token}" {
		t.Fatalf("the stored spec changed: %v", j.GetSpec().GetHttp())
	}
}

// TestMissingSecretFailsTheRun: a secret deleted after registration fails
// the run with secret_missing before anything is delivered, and the run
// is not retried.
func TestMissingSecretFailsTheRun(t *testing.T) {
	keys := testKeyring(t)
	h := newHarness(t, withSecrets(keys))
	h.putSecret(keys, "token", "t0k3n")
	s := spec("hook", "@every 1h")
	s.Retry = &pb.Retry{MaxAttempts: 3, InitialBackoff: durationpb.New(time.Second)}
	s.Http.Headers = map[string]string{"Authorization": "Bearer ${secret:token}"}
	h.putJob(s)
	h.apply(&pb.Command{Kind: &pb.Command_DeleteSecret{DeleteSecret: &pb.DeleteSecretCommand{Name: "token"}}})
	h.lead()
	h.trigger("hook", "r1")
	h.step(5 * time.Second)
	runs := h.runs("hook")
	if len(runs) != 1 || runs[0].GetState() != pb.RunState_RUN_STATE_FAILED || runs[0].GetReason() != secret.ReasonMissing ||
		len(runs[0].GetAttempts()) != 1 || !strings.Contains(runs[0].GetAttempts()[0].GetDetail(), `secret "token" not found`) {
		t.Fatalf("runs %v, want one failed %s, not retried, naming the secret", runs, secret.ReasonMissing)
	}
	if n := len(h.exec.startedOf("hook")); n != 0 {
		t.Fatalf("%d attempts were delivered without their secret", n)
	}
}

// echoExec reports every header value of its attempt in its detail and
// output, as a downstream's error or a command printing its environment
// would.
type echoExec struct{}

func (echoExec) Execute(_ context.Context, a dispatch.Attempt) dispatch.Outcome {
	var vals []string
	for _, v := range a.HTTP.GetHeaders() {
		vals = append(vals, v)
	}
	text := "refused: " + strings.Join(vals, ",") + " at " + a.HTTP.GetUrl()
	now := time.Now()
	return dispatch.Outcome{State: pb.RunState_RUN_STATE_FAILED, Detail: text, Output: []byte(text), StartedAt: now, FinishedAt: now}
}

func TestOutcomesNeverCarryASecret(t *testing.T) {
	keys := testKeyring(t)
	h := newHarness(t, withExecutor(echoExec{}), withSecrets(keys))
	h.putSecret(keys, "pw", "p@ssw0rd")
	s := spec("hook", "@every 1h")
	s.Http.Url = "http://user:${secret:pw}@127.0.0.1:1/"
	s.Http.Headers = map[string]string{"X-Pw": "${secret:pw}"}
	h.putJob(s)
	h.lead()
	h.trigger("hook", "r1")
	a := h.runs("hook")[0].GetAttempts()[0]
	if strings.Contains(a.GetDetail(), "w0rd") || strings.Contains(string(a.GetOutput()), "w0rd") ||
		!strings.Contains(a.GetDetail(), secret.Redacted) {
		t.Fatalf("attempt detail %q, output %q: want the value redacted", a.GetDetail(), a.GetOutput())
	}
}

// TestWorkerOffersCarryTheirSecretsFilledIn: a worker attempt goes to the
// hub with its env filled in.
func TestWorkerOffersCarryTheirSecretsFilledIn(t *testing.T) {
	keys := testKeyring(t)
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r), withSecrets(keys))
	h.putSecret(keys, "api-key", "k3y")
	s := workerJob("remote")
	s.Schedule = "@every 1h"
	s.Worker.Env = map[string]string{"API_KEY": "${secret:api-key}", "PLAIN": "x"}
	h.putJob(s)
	h.lead()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.s.Trigger(ctx, &pb.Fire{Job: "remote", RequestId: "r1"}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("an offer", func() bool { return len(r.attempts()) == 1 })
	got := r.attempts()[0]
	if env := got.a.Worker.GetEnv(); env["API_KEY"] != "k3y" || env["PLAIN"] != "x" {
		t.Fatalf("offered env %v, want the secret filled in", env)
	}
	got.done(got.a, succeeded(h))
}
