package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/api/gateway"
	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// The protocol tests of docs/workers.md run on a real cluster with a
// lease of a second: an attempt of four leases stands for the 40 s one of
// a 10 s lease, at a tenth of the time.
const testWorkerLease = time.Second

// httpWorker speaks the HTTP worker protocol to one node, as an SDK does.
type httpWorker struct {
	t      *testing.T
	addr   string // the node's HTTP address
	secret string
}

// post sends body to path and decodes the JSON answer.
func (w httpWorker) post(ctx context.Context, path, body string) (int, map[string]any) {
	w.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.addr+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if w.secret != "" {
		req.Header.Set("Authorization", "Bearer "+w.secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("POST %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		w.t.Fatalf("POST %s: %d, body %q is no JSON object", path, resp.StatusCode, raw)
	}
	return resp.StatusCode, doc
}

// poll polls as worker id for handler charge of pool, waiting up to wait.
func (w httpWorker) poll(id, pool string, wait time.Duration) (int, []map[string]any, map[string]any) {
	w.t.Helper()
	code, doc := w.post(w.t.Context(), "/v1/workers/"+id+":poll",
		fmt.Sprintf(`{"pool": %q, "handlers": ["charge"], "max": 8, "wait": "%gs"}`, pool, wait.Seconds()))
	var offers []map[string]any
	if list, ok := doc["offers"].([]any); ok {
		for _, o := range list {
			offers = append(offers, o.(map[string]any))
		}
	}
	return code, offers, doc
}

// offer polls until one offer comes, within 20 s.
func (w httpWorker) offer(id, pool string) map[string]any {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		code, offers, doc := w.poll(id, pool, 5*time.Second)
		if code != http.StatusOK {
			w.t.Fatalf("poll of %s: %d %v", id, code, doc)
		}
		if len(offers) > 0 {
			return offers[0]
		}
	}
	w.t.Fatalf("no offer for %s within 20s", id)
	return nil
}

func attemptPath(o map[string]any, verb string) string {
	return "/v1/attempts/" + o["run_id"].(string) + "/" + o["token"].(string) + ":" + verb
}

func (w httpWorker) heartbeat(o map[string]any, body string) (int, map[string]any) {
	w.t.Helper()
	return w.post(w.t.Context(), attemptPath(o, "heartbeat"), body)
}

func (w httpWorker) complete(o map[string]any, outcome string) (int, map[string]any) {
	w.t.Helper()
	return w.post(w.t.Context(), attemptPath(o, "complete"), `{"outcome": "`+outcome+`", "output": "done\n"}`)
}

// superseded reports whether an answer is 409 SUPERSEDED for why.
func superseded(code int, doc map[string]any, why string) bool {
	if code != http.StatusConflict {
		return false
	}
	details, _ := doc["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && m["reason"] == remote.ReasonSuperseded {
			meta, _ := m["metadata"].(map[string]any)
			return meta[remote.MetadataWhy] == why
		}
	}
	return false
}

func tokenOf(t *testing.T, o map[string]any) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(o["token"].(string), 10, 64)
	if err != nil {
		t.Fatalf("offer token %v: %v", o["token"], err)
	}
	return n
}

// workerCluster is a cluster with ACLs, fence keys and a short worker
// lease, the job charge (handler charge of pool batch) and worker tokens
// of pools batch and other.
type workerCluster struct {
	servers          []*Server
	leader           *Server
	followers        []*Server
	keys             *fence.Keys
	mgmt             context.Context
	batch, otherPool string // worker tokens' secrets
	jobs             pb.JobServiceClient
	runs             pb.RunServiceClient
	acl              pb.AclServiceClient
}

func startWorkerCluster(t *testing.T, spec *pb.JobSpec) *workerCluster {
	t.Helper()
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	wc := &workerCluster{keys: keys}
	wc.servers = startCluster(t, 3, func(c *Config) {
		c.ACL, c.ACLBootstrapSecret = true, bootstrapSecret
		c.WorkerLease = testWorkerLease
		c.Policy.FenceKeys = keys
		// These tests are about leases, not failover: an election under
		// a loaded machine's -race run would answer a heartbeat NOT_LEADER.
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
	})
	wc.leader, wc.followers = leaderOf(t, wc.servers)
	testutil.WaitFor(t, 10*time.Second, "cluster version 3 and the bootstrap on every node", func() bool {
		for _, s := range wc.servers {
			if s.FSM().ClusterVersion() < fsm.ProgressVersion || !s.FSM().ACLBootstrapped() {
				return false
			}
		}
		return true
	})
	conn := dialPlain(t, wc.followers[0].Addr())
	wc.mgmt = withToken(t.Context(), bootstrapSecret)
	wc.jobs, wc.runs, wc.acl = pb.NewJobServiceClient(conn), pb.NewRunServiceClient(conn), pb.NewAclServiceClient(conn)
	for name, pool := range map[string]string{"batch-workers": "batch", "other-workers": "other"} {
		resp, err := wc.acl.CreateAclToken(wc.mgmt, &pb.CreateAclTokenRequest{Name: name, Role: pb.AclRole_ACL_ROLE_WORKER, Pools: []string{pool}})
		if err != nil {
			t.Fatal(err)
		}
		if pool == "batch" {
			wc.batch = resp.GetSecret()
		} else {
			wc.otherPool = resp.GetSecret()
		}
	}
	if _, err := wc.jobs.CreateJob(wc.mgmt, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	return wc
}

func chargeJob() *pb.JobSpec {
	return &pb.JobSpec{Name: "charge", Schedule: "@yearly",
		Worker: &pb.WorkerTarget{Pool: "batch", Handler: "charge", Payload: `{"mode":"full"}`}}
}

// trigger starts a run of charge and returns its id.
func (wc *workerCluster) trigger(t *testing.T) string {
	t.Helper()
	resp, err := wc.jobs.TriggerJob(wc.mgmt, &pb.TriggerJobRequest{Name: "charge"})
	if err != nil {
		t.Fatalf("TriggerJob: %v", err)
	}
	return resp.GetRun().GetId()
}

func (wc *workerCluster) run(t *testing.T, id string) *pb.Run {
	t.Helper()
	resp, err := wc.runs.GetRun(wc.mgmt, &pb.GetRunRequest{Id: id})
	if err != nil {
		t.Fatalf("GetRun %s: %v", id, err)
	}
	return resp.GetRun()
}

// An HTTP worker polling a follower is offered the leader's attempt, with
// a signature that verifies; heartbeats keep it for four leases and its
// progress reaches `run get` on every node; its outcome finishes the run.
// A worker token of another pool is refused its poll.
func TestHTTPWorkerKeepsALongAttemptThroughAFollower(t *testing.T) {
	wc := startWorkerCluster(t, chargeJob())
	w := httpWorker{t: t, addr: wc.followers[1].HTTPAddr(), secret: wc.batch}

	if code, _, doc := (httpWorker{t: t, addr: wc.followers[1].HTTPAddr(), secret: wc.otherPool}).poll("w9", "batch", 0); code != http.StatusForbidden {
		t.Fatalf("poll of pool batch with a token of pool other: %d %v, want 403", code, doc)
	}

	for _, body := range []string{
		`{"pool": "batch", "handlers": ["charge"], "wait": "1m"}`,     // a Go duration, not proto JSON's
		`{"pool": "batch", "handlers": ["charge"], "concurrency": 2}`, // no such field
		`{"pool": "batch"}`, // no handler
	} {
		if code, doc := w.post(t.Context(), "/v1/workers/w1:poll", body); code != http.StatusBadRequest {
			t.Fatalf("poll %s: %d %v, want 400", body, code, doc)
		}
	}

	id := wc.trigger(t)
	o := w.offer("w1", "batch")
	if o["run_id"] != id || o["handler"] != "charge" || o["lease"] != "1s" {
		t.Fatalf("offer %v, want run %s of handler charge with a 1s lease", o, id)
	}
	run := fence.Run{Token: tokenOf(t, o), Job: "charge", RunID: id, IdempotencyKey: o["idempotency_key"].(string),
		Attempt: uint32(o["attempt"].(float64))}
	if run.ScheduledAt, _ = time.Parse(time.RFC3339, o["slot"].(string)); run.ScheduledAt.IsZero() {
		t.Fatalf("offer slot %v", o["slot"])
	}
	if err := wc.keys.VerifyV2(fence.ExecDispatch(run, []byte(o["payload"].(string))), o["signature"].(string)); err != nil {
		t.Fatalf("offer signature %v: %v, want v2's run-only form over the payload", o["signature"], err)
	}

	// Four leases of heartbeats, every third of the lease, reporting
	// progress as it goes.
	end := time.Now().Add(4 * testWorkerLease)
	for pct := 0; time.Now().Before(end); pct += 10 {
		code, doc := w.heartbeat(o, fmt.Sprintf(`{"progress": %d, "message": "charged %d cards"}`, min(pct, 90), pct))
		if code != http.StatusOK || doc["lease"] != "1s" {
			t.Fatalf("heartbeat: %d %v, want the lease extended", code, doc)
		}
		time.Sleep(testWorkerLease / 3)
	}
	r := wc.run(t, id)
	if len(r.GetAttempts()) != 1 || r.GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		t.Fatalf("run after four leases of heartbeats: %v, want its one attempt still executing", r)
	}
	testutil.WaitFor(t, 5*time.Second, "the last progress in run get", func() bool {
		a := fsm.CurrentAttempt(wc.run(t, id))
		return a.GetProgress() == 90 && strings.HasPrefix(a.GetProgressMessage(), "charged ")
	})
	for _, s := range wc.servers {
		if a := fsm.CurrentAttempt(runOn(t, s, id)); a.Progress == nil {
			t.Errorf("node %s holds no progress of the attempt: %v", s.cfg.ID, a)
		}
	}

	if code, doc := w.complete(o, "succeeded"); code != http.StatusOK {
		t.Fatalf("complete: %d %v", code, doc)
	}
	testutil.WaitFor(t, 5*time.Second, "the run to succeed", func() bool {
		return wc.run(t, id).GetState() == pb.RunState_RUN_STATE_SUCCEEDED
	})
	if a := fsm.CurrentAttempt(wc.run(t, id)); !strings.HasPrefix(a.GetDetail(), "worker w1") || string(a.GetOutput()) != "done\n" {
		t.Fatalf("attempt %v, want the worker's detail and output", a)
	}
	if code, doc := w.complete(o, "succeeded"); !superseded(code, doc, remote.WhyNotHeld) {
		t.Fatalf("a retried complete: %d %v, want 409 SUPERSEDED %s", code, doc, remote.WhyNotHeld)
	}
}

// runOn reads a run from s's own state.
func runOn(t *testing.T, s *Server, id string) *pb.Run {
	t.Helper()
	r, err := s.FSM().Run(id)
	if err != nil {
		t.Fatalf("run %s on %s: %v", id, s.cfg.ID, err)
	}
	return r
}

// A worker that stops heartbeating loses its attempt within about a
// lease: another worker gets the run under a larger token, and the first
// one's heartbeat and outcome answer 409 SUPERSEDED. The run ends with
// the second worker's outcome.
func TestHTTPWorkerThatStopsHeartbeatingLosesItsAttempt(t *testing.T) {
	wc := startWorkerCluster(t, chargeJob())
	first := httpWorker{t: t, addr: wc.leader.HTTPAddr(), secret: wc.batch}
	second := httpWorker{t: t, addr: wc.followers[0].HTTPAddr(), secret: wc.batch}
	id := wc.trigger(t)
	lost := first.offer("w1", "batch")

	again := second.offer("w2", "batch")
	if again["run_id"] != id || tokenOf(t, again) <= tokenOf(t, lost) {
		t.Fatalf("second worker's offer %v, want run %s under a token above %v", again, id, lost["token"])
	}
	if code, doc := first.heartbeat(lost, `{}`); !superseded(code, doc, remote.WhyLeaseExpired) {
		t.Fatalf("heartbeat of the lost attempt: %d %v, want 409 SUPERSEDED %s", code, doc, remote.WhyLeaseExpired)
	}
	if code, doc := first.complete(lost, "succeeded"); !superseded(code, doc, remote.WhyLeaseExpired) {
		t.Fatalf("outcome of the lost attempt: %d %v, want 409 SUPERSEDED %s", code, doc, remote.WhyLeaseExpired)
	}
	if code, doc := second.complete(again, "succeeded"); code != http.StatusOK {
		t.Fatalf("complete: %d %v", code, doc)
	}
	testutil.WaitFor(t, 5*time.Second, "the run to succeed by the second worker", func() bool {
		return wc.run(t, id).GetState() == pb.RunState_RUN_STATE_SUCCEEDED
	})
	atts := wc.run(t, id).GetAttempts()
	if len(atts) != 2 || atts[0].GetState() != pb.RunState_RUN_STATE_SUPERSEDED || !strings.HasPrefix(atts[1].GetDetail(), "worker w2") {
		t.Fatalf("attempts %v, want the lost one superseded and the second worker's success", atts)
	}
}

// A batch of outcomes through a follower: the first report of the attempt
// is taken and finishes the run, a repeat of it in the same batch is
// superseded not_held, each in its own result, in order.
func TestHTTPWorkerReportsABatchThroughAFollower(t *testing.T) {
	wc := startWorkerCluster(t, chargeJob())
	w := httpWorker{t: t, addr: wc.followers[0].HTTPAddr(), secret: wc.batch}
	id := wc.trigger(t)
	o := w.offer("w1", "batch")
	item := fmt.Sprintf(`{"run_id": %q, "token": %q, "outcome": "succeeded", "output": "done\n"}`, o["run_id"], o["token"])
	code, doc := w.post(t.Context(), "/v1/attempts:batchComplete", `{"outcomes": [`+item+`, `+item+`]}`)
	if code != http.StatusOK {
		t.Fatalf("batchComplete: %d %v", code, doc)
	}
	results, _ := doc["results"].([]any)
	if len(results) != 2 || !reflect.DeepEqual(results[0], map[string]any{"taken": true}) ||
		!reflect.DeepEqual(results[1], map[string]any{"superseded": remote.WhyNotHeld}) {
		t.Fatalf("results %v, want taken, then superseded %s", results, remote.WhyNotHeld)
	}
	testutil.WaitFor(t, 5*time.Second, "the run to succeed", func() bool {
		return wc.run(t, id).GetState() == pb.RunState_RUN_STATE_SUCCEEDED
	})
	if code, doc := w.post(t.Context(), "/v1/attempts:batchComplete", `{"outcomes": []}`); code != http.StatusBadRequest {
		t.Fatalf("an empty batch: %d %v, want 400", code, doc)
	}
}

// A cancelled run's attempt is told at its next heartbeat (409
// SUPERSEDED cancelled); the worker's report then ends the run CANCELLED.
func TestHTTPWorkerIsToldOfACancel(t *testing.T) {
	wc := startWorkerCluster(t, chargeJob())
	w := httpWorker{t: t, addr: wc.followers[0].HTTPAddr(), secret: wc.batch}
	id := wc.trigger(t)
	o := w.offer("w1", "batch")
	if _, err := wc.runs.CancelRun(wc.mgmt, &pb.CancelRunRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the heartbeat to say cancelled", func() bool {
		code, doc := w.heartbeat(o, `{}`)
		return superseded(code, doc, remote.WhyCancelled)
	})
	if code, doc := w.complete(o, "cancelled"); code != http.StatusOK {
		t.Fatalf("complete: %d %v", code, doc)
	}
	if r := wc.run(t, id); r.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Fatalf("run %v, want CANCELLED", r)
	}
}

// A long poll, forwarded by a follower, ends within a second once its
// token is deleted (401), on the follower and on the leader alike.
func TestDeletingATokenEndsItsHTTPPolls(t *testing.T) {
	wc := startWorkerCluster(t, chargeJob())
	ended := make(chan int, 1)
	go func() {
		w := httpWorker{t: t, addr: wc.followers[0].HTTPAddr(), secret: wc.otherPool}
		code, _, _ := w.poll("w1", "other", 30*time.Second)
		ended <- code
	}()
	testutil.WaitFor(t, 5*time.Second, "the poll to reach the leader", func() bool {
		return strings.Contains(metricsOf(t, wc.leader), `raftcron_workers_connected{pool="other"} 1`)
	})
	if _, err := wc.acl.DeleteAclToken(wc.mgmt, &pb.DeleteAclTokenRequest{AccessorId: accessorOf(t, wc.acl, wc.mgmt, "other-workers")}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	select {
	case code := <-ended:
		if code != http.StatusUnauthorized || time.Since(deleted) > time.Second {
			t.Fatalf("poll ended %s after the deletion with %d, want 401 within a second", time.Since(deleted), code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the poll of a deleted token still open 10s after the deletion")
	}
}

func metricsOf(t *testing.T, s *Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// A poll may wait longer than the HTTP port's write timeout: its answer
// gets the time of the longest wait, and more.
func TestAPollsAnswerOutlivesTheWriteTimeout(t *testing.T) {
	if gateway.PollWriteTimeout < remote.MaxPollWait+10*time.Second {
		t.Fatalf("a poll's write timeout %s leaves no room after its longest wait %s", gateway.PollWriteTimeout, remote.MaxPollWait)
	}
}
