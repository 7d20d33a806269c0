package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/api/gateway"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// node is a one-node stand-in for Raft: commands apply to a real FSM in
// order, reads need no barrier, and manual runs commit straight into the
// FSM (nothing is dispatched).
type node struct {
	state *fsm.FSM
	mu    sync.Mutex
	index uint64
}

func (n *node) Apply(_ context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.index++
	return n.state.Apply(&raft.Log{Index: n.index, Term: 1, Type: raft.LogCommand, Data: data}).(*pb.CommandResult), nil
}

func (n *node) ReadBarrier(context.Context) error { return nil }

func (n *node) Trigger(ctx context.Context, run *pb.Fire) (*pb.FireResult, error) {
	job, err := n.state.Job(run.GetJob())
	if err != nil {
		return nil, err
	}
	run.Generation, run.Kind = job.GetGeneration(), pb.FireKind_FIRE_KIND_MANUAL
	res, err := n.Apply(ctx, &pb.Command{ProposedAtUnixNano: time.Now().UnixNano(), Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: "n1", Term: 1, Fires: []*pb.Fire{run},
	}}})
	if err != nil {
		return nil, err
	}
	return res.GetFires()[0], nil
}

type cluster struct{}

func (cluster) Status() *pb.NodeStatus {
	return &pb.NodeStatus{Id: "n1", State: "leader", Leader: &pb.ServerRef{Id: "n1", Address: "127.0.0.1:7001"}, Term: 2}
}
func (cluster) AddVoter(context.Context, string, string) error { return nil }
func (cluster) RemoveServer(context.Context, string) error     { return nil }
func (cluster) TransferLeadership(context.Context, string) (*pb.ServerRef, error) {
	return nil, nil
}

// smuggledKeys are metadata only a node may set: a forwarded call, and
// the principal a forwarding node vouches for.
var smuggledKeys = []string{api.ForwardedKey, "raftcron-principal"}

// tokens records whether any call carried metadata an HTTP client must not
// be able to set. The ACL interceptor after it authenticates the calls.
type tokens struct {
	mu       sync.Mutex
	smuggled []string
}

func (tk *tokens) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, k := range smuggledKeys {
		if v := md.Get(k); len(v) > 0 {
			tk.mu.Lock()
			tk.smuggled = append(tk.smuggled, info.FullMethod+" "+k)
			tk.mu.Unlock()
		}
	}
	return handler(ctx, req)
}

// addToken stores a token whose secret is its name, as the ACL commands do.
func (n *node) addToken(t *testing.T, name string, role pb.AclRole, bootstrap bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	tok := &pb.AclToken{AccessorId: "acc-" + name, Name: name, Role: role, SecretHash: sum[:]}
	cmd := &pb.Command{Kind: &pb.Command_CreateAclToken{CreateAclToken: &pb.CreateAclTokenCommand{Token: tok}}}
	if bootstrap {
		cmd = &pb.Command{Kind: &pb.Command_BootstrapAcl{BootstrapAcl: &pb.BootstrapAclCommand{Token: tok}}}
	}
	if res, err := n.Apply(context.Background(), cmd); err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("token %s: %v %v", name, res, err)
	}
}

type env struct {
	t      *testing.T
	url    string
	tokens *tokens
	node   *node
}

func start(t *testing.T) *env {
	t.Helper()
	n := &node{state: fsm.New()}
	n.addToken(t, "alice", pb.AclRole_ACL_ROLE_MANAGEMENT, true)
	n.addToken(t, "reader", pb.AclRole_ACL_ROLE_READ, false)
	tk := &tokens{}
	auth := api.NewAuthorizer(api.AuthConfig{Enabled: true, Tokens: n.state})
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(api.RecoveryInterceptor(nil), tk.intercept, auth.Unary()))
	audit := api.NewAuditSwitch(n, n.state, api.DefaultAuditLimit, nil, nil)
	d := api.Deps{Store: n, Registry: n.state, Ledger: n.state, AuditLog: n.state, Calendars: n.state, Cluster: cluster{}, Triggerer: n, Audit: audit,
		Chains: n.state}
	api.Register(gs, api.Services{
		Jobs: api.NewJobService(d), Cluster: api.NewClusterService(d), Runs: api.NewRunService(d), Audit: api.NewAuditService(d),
		Calendar: api.NewCalendarService(d), Freeze: api.NewFreezeService(d), Chains: api.NewChainService(d),
	})
	in, err := gateway.NewInProcess()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(in.Listener()) }()
	h, err := gateway.New(context.Background(), in.Conn(), "v-test")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		gs.Stop()
		_ = in.Close()
	})
	return &env{t: t, url: hs.URL, tokens: tk, node: n}
}

// do sends one request (body "" for none) as "Bearer <token>" unless token
// is "", and decodes the JSON answer.
func (e *env) do(method, path, body, token string) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Grpc-Metadata-Raftcron-Forwarded", "1")
	req.Header.Set("Grpc-Metadata-Raftcron-Principal", "mallory")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		e.t.Fatalf("%s %s: %d, body %q is not a JSON object", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, doc
}

// ok sends a request that must succeed.
func (e *env) ok(method, path, body string) map[string]any {
	e.t.Helper()
	code, doc := e.do(method, path, body, "alice")
	if code != http.StatusOK {
		e.t.Fatalf("%s %s: %d %v, want 200", method, path, code, doc)
	}
	return doc
}

// fails sends a request that must fail with the HTTP status and gRPC code.
func (e *env) fails(method, path, body string, httpStatus int, code codes.Code) map[string]any {
	e.t.Helper()
	got, doc := e.do(method, path, body, "alice")
	if got != httpStatus || doc["code"] != float64(code) || doc["message"] == "" {
		e.t.Fatalf("%s %s: %d %v, want %d with code %d (%v) and a message", method, path, got, doc, httpStatus, code, code)
	}
	return doc
}

const billing = `{"name": "billing", "schedule": "0 2 * * *", "timezone": "Europe/Berlin",
  "http": {"url": "http://billing.internal/run"}, "labels": {"team": "billing"}}`

func jobSpec(name, team string) string {
	return fmt.Sprintf(`{"name": %q, "schedule": "@daily", "http": {"url": "http://%s.internal/"}, "labels": {"team": %q}}`,
		name, name, team)
}

func dig(doc map[string]any, path ...string) any {
	var v any = doc
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestJobRoutes(t *testing.T) {
	e := start(t)
	doc := e.ok("PUT", "/v1/jobs/billing", billing)
	if dig(doc, "created") != true || dig(doc, "job", "spec", "name") != "billing" || dig(doc, "job", "version") != "1" ||
		dig(doc, "job", "spec", "catchup", "window") != "1m0s" {
		t.Fatalf("PUT /v1/jobs/billing: %v, want the created job, snake_case, defaults filled in", doc)
	}
	if doc := e.ok("PUT", "/v1/jobs/billing", billing); dig(doc, "changed") != nil {
		t.Fatalf("the same PUT again: %v, want unchanged", doc)
	}
	if doc := e.ok("GET", "/v1/jobs/billing", ""); dig(doc, "job", "spec", "timezone") != "Europe/Berlin" ||
		dig(doc, "job", "status", "next_fire_unix") == nil {
		t.Fatalf("GET /v1/jobs/billing: %v", doc)
	}

	e.ok("PUT", "/v1/jobs/ops-a", jobSpec("ops-a", "ops"))
	e.ok("PUT", "/v1/jobs/ops-b", `{"schedule": "@hourly", "http": {"url": "http://ops.internal/"}, "labels": {"team": "ops"}}`)
	names := func(doc map[string]any) (out []string) {
		for _, j := range doc["jobs"].([]any) {
			out = append(out, dig(j.(map[string]any), "spec", "name").(string))
		}
		return out
	}
	page := e.ok("GET", "/v1/jobs?page_size=2", "")
	if got := names(page); !slices.Equal(got, []string{"billing", "ops-a"}) || page["next_page_token"] == nil {
		t.Fatalf("first page: %v", page)
	}
	if got := names(e.ok("GET", "/v1/jobs?page_size=2&page_token="+page["next_page_token"].(string), "")); !slices.Equal(got, []string{"ops-b"}) {
		t.Fatalf("second page: %v", got)
	}
	if got := names(e.ok("GET", "/v1/jobs?label_selector%5Bteam%5D=ops", "")); !slices.Equal(got, []string{"ops-a", "ops-b"}) {
		t.Fatalf("label filter team=ops: %v", got)
	}

	if doc := e.ok("POST", "/v1/jobs/billing:pause", `{"note": "billing freeze"}`); dig(doc, "job", "spec", "paused") != true ||
		dig(doc, "job", "spec", "pause_note") != "billing freeze" {
		t.Fatalf("pause: %v", doc)
	}
	if doc := e.ok("POST", "/v1/jobs/billing:resume", ""); dig(doc, "job", "spec", "paused") != nil {
		t.Fatalf("resume: %v", doc)
	}
	if times := e.ok("GET", "/v1/jobs/billing/next?count=3", "")["times"].([]any); len(times) != 3 {
		t.Fatalf("next: %v", times)
	}

	e.ok("DELETE", "/v1/jobs/ops-b", "")
	e.fails("GET", "/v1/jobs/ops-b", "", http.StatusNotFound, codes.NotFound)
	e.fails("DELETE", "/v1/jobs/billing?expected_version=99", "", http.StatusBadRequest, codes.FailedPrecondition)
}

func TestRunRoutes(t *testing.T) {
	e := start(t)
	e.ok("PUT", "/v1/jobs/billing", billing)
	run := e.ok("POST", "/v1/jobs/billing:trigger", `{"request_id": "deploy-1"}`)["run"].(map[string]any)
	id := run["id"].(string)
	if run["kind"] != "FIRE_KIND_MANUAL" || run["state"] != "RUN_STATE_DISPATCHED" {
		t.Fatalf("trigger: %v", run)
	}
	if runs := e.ok("GET", "/v1/runs?job=billing&limit=5", "")["runs"].([]any); len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	if doc := e.ok("GET", "/v1/runs/"+id, ""); dig(doc, "run", "request_id") != "deploy-1" {
		t.Fatalf("GET run: %v", doc)
	}
	if doc := e.ok("POST", "/v1/runs/"+id+":cancel", ""); dig(doc, "run", "state") != "RUN_STATE_CANCELLED" ||
		dig(doc, "run", "reason") != fsm.ReasonCancelRequested {
		t.Fatalf("cancel: %v", doc)
	}
	e.fails("POST", "/v1/runs/"+id+":cancel", "", http.StatusBadRequest, codes.FailedPrecondition)
	e.fails("GET", "/v1/runs/nope-1", "", http.StatusNotFound, codes.NotFound)
}

// TestCheckinRoute: the ping of the JSON body, and the field a
// broken one names.
func TestCheckinRoute(t *testing.T) {
	e := start(t)
	e.ok("PUT", "/v1/jobs/nightly", `{"schedule": "0 2 * * *", "checkin": {}}`)
	start := e.ok("POST", "/v1/jobs/nightly:checkin", `{"status": "start"}`)["run"].(map[string]any)
	if start["kind"] != "FIRE_KIND_CHECKIN" || start["state"] != "RUN_STATE_DISPATCHED" {
		t.Fatalf("start: %v", start)
	}
	doc := e.ok("POST", "/v1/jobs/nightly:checkin", `{"status": "fail", "exit_code": 3, "output": "disk full"}`)
	attempt := dig(doc, "run", "attempts").([]any)[0].(map[string]any)
	if dig(doc, "run", "id") != start["id"] || dig(doc, "run", "state") != "RUN_STATE_FAILED" ||
		attempt["exit_code"] != float64(3) || attempt["detail"] != "exit status 3" {
		t.Fatalf("fail: %v", doc)
	}
	bad := e.fails("POST", "/v1/jobs/nightly:checkin", `{"status": "done"}`, http.StatusBadRequest, codes.InvalidArgument)
	if !strings.Contains(bad["message"].(string), "status: must be start, success or fail") {
		t.Fatalf("bad status: %v", bad)
	}
	if code, _ := e.do("POST", "/v1/jobs/nightly:checkin", `{}`, "reader"); code != http.StatusForbidden {
		t.Fatalf("a read token checked in: %d", code)
	}
}

func TestErrorsCarryTheGRPCCodeAndBadRequestDetails(t *testing.T) {
	e := start(t)
	doc := e.fails("PUT", "/v1/jobs/billing", `{"schedule": "61 * * * *", "http": {"url": "http://x/"}}`,
		http.StatusBadRequest, codes.InvalidArgument)
	details := doc["details"].([]any)
	d := details[0].(map[string]any)
	if d["@type"] != "type.googleapis.com/google.rpc.BadRequest" ||
		dig(d, "field_violations") == nil && dig(d, "fieldViolations") == nil {
		t.Fatalf("details %v, want a BadRequest with field violations", details)
	}
	if !strings.Contains(string(mustJSON(t, d)), `"schedule"`) {
		t.Fatalf("BadRequest %v does not name the schedule field", d)
	}
	e.fails("PUT", "/v1/jobs/billing", `{"schedul": "@daily"}`, http.StatusBadRequest, codes.InvalidArgument)
	e.fails("GET", "/v1/jobs/billing", "", http.StatusNotFound, codes.NotFound)

	// A body naming another job than the path changes nothing.
	doc = e.fails("PUT", "/v1/jobs/billing", jobSpec("other", "billing"), http.StatusBadRequest, codes.InvalidArgument)
	if !strings.Contains(doc["message"].(string), "spec.name") {
		t.Fatalf("mismatched names: %v, want the field named", doc)
	}
	e.fails("GET", "/v1/jobs/billing", "", http.StatusNotFound, codes.NotFound)
	e.fails("GET", "/v1/jobs/other", "", http.StatusNotFound, codes.NotFound)

	e.fails("GET", "/v1/nothing-here", "", http.StatusNotFound, codes.NotFound)
}

func TestCallsGoThroughTheInterceptorsWithTheBearerToken(t *testing.T) {
	e := start(t)
	if code, doc := e.do("PUT", "/v1/jobs/billing", billing, "bad"); code != http.StatusUnauthorized || doc["code"] != float64(codes.Unauthenticated) {
		t.Fatalf("bad token: %d %v, want 401", code, doc)
	}
	if code, doc := e.do("PUT", "/v1/jobs/billing", billing, ""); code != http.StatusUnauthorized || doc["code"] != float64(codes.Unauthenticated) {
		t.Fatalf("no token: %d %v, want 401", code, doc)
	}
	if code, doc := e.do("GET", "/v1/audit", "", "reader"); code != http.StatusForbidden || doc["code"] != float64(codes.PermissionDenied) {
		t.Fatalf("audit with a read token: %d %v, want 403", code, doc)
	}
	e.ok("PUT", "/v1/jobs/billing", billing) // as alice
	recs := e.ok("GET", "/v1/audit?job=billing", "")["records"].([]any)
	if len(recs) != 1 || dig(recs[0].(map[string]any), "principal") != "alice" || dig(recs[0].(map[string]any), "action") != "create" {
		t.Fatalf("audit of billing: %v, want alice's create", recs)
	}
	if all := e.ok("GET", "/v1/audit?limit=1", "")["records"].([]any); len(all) != 1 {
		t.Fatalf("audit limit=1: %v", all)
	}
	e.tokens.mu.Lock()
	defer e.tokens.mu.Unlock()
	if len(e.tokens.smuggled) > 0 {
		t.Fatalf("Grpc-Metadata-* headers became metadata of %v", e.tokens.smuggled)
	}
}

// A job with dependencies goes in and out in the job file's form, and the
// graph route shows it with its parent.
func TestDependenciesAndGraphRoute(t *testing.T) {
	e := start(t)
	if _, err := e.node.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	e.ok("PUT", "/v1/jobs/billing", billing)
	e.ok("PUT", "/v1/jobs/ledger", `{"name": "ledger", "after": [{"job": "billing", "on": "any"}], "after_within": "1h",
		"http": {"url": "http://ledger.internal/run"}}`)
	job := e.ok("GET", "/v1/jobs/ledger", "")
	if dig(job, "job", "spec", "after_mode") != "all" || dig(job, "job", "spec", "after_within") != "1h0m0s" {
		t.Fatalf("ledger as stored: %v", job)
	}
	g := e.ok("GET", "/v1/graph?name=ledger", "")["jobs"].([]any)
	if len(g) != 2 || dig(g[0].(map[string]any), "name") != "billing" || dig(g[1].(map[string]any), "after_mode") != "all" {
		t.Fatalf("graph: %v", g)
	}
	e.fails("DELETE", "/v1/jobs/billing", "", http.StatusBadRequest, codes.FailedPrecondition)
	e.ok("DELETE", "/v1/jobs/billing?force=true", "")
}

func TestClusterRoute(t *testing.T) {
	e := start(t)
	if doc := e.ok("GET", "/v1/cluster", ""); dig(doc, "status", "id") != "n1" || dig(doc, "status", "state") != "leader" {
		t.Fatalf("cluster: %v", doc)
	}
}

func TestOpenAPIDocumentListsEveryRoute(t *testing.T) {
	e := start(t)
	doc := e.ok("GET", "/v1/openapi.json", "")
	if dig(doc, "info", "version") != "v-test" || dig(doc, "info", "title") != "raftcron" || !strings.HasPrefix(doc["openapi"].(string), "3.") {
		t.Fatalf("openapi %v, info %v: want OpenAPI 3 with the build's version", doc["openapi"], doc["info"])
	}
	paths := doc["paths"].(map[string]any)
	want := map[string][]string{
		"/v1/jobs": {"get"}, "/v1/jobs/{name}": {"delete", "get", "put"},
		"/v1/jobs/{name}:pause": {"post"}, "/v1/jobs/{name}:resume": {"post"}, "/v1/jobs/{name}:trigger": {"post"},
		"/v1/jobs/{name}:checkin": {"post"}, "/v1/jobs/{name}:backfill": {"post"}, "/v1/jobs/{name}/backfill:cancel": {"post"},
		"/v1/jobs/{name}/next": {"get"}, "/v1/runs": {"get"}, "/v1/runs/{id}": {"get"}, "/v1/runs/{id}:cancel": {"post"},
		"/v1/cluster": {"get"}, "/v1/audit": {"get"}, "/v1/graph": {"get"},
		"/v1/calendars": {"get"}, "/v1/calendars/{name}": {"delete", "get", "put"}, "/v1/calendars/{name}:import": {"post"},
		"/v1/freezes": {"get", "post"}, "/v1/freezes/{name}": {"delete"},
		"/v1/workers/{id}:poll": {"post"}, "/v1/attempts/{run_id}/{token}:heartbeat": {"post"},
		"/v1/attempts/{run_id}/{token}:complete": {"post"}, "/v1/attempts:batchComplete": {"post"},
		"/v1/alerts":   {"get"},
		"/v1/channels": {"get"}, "/v1/channels/{name}": {"delete", "get", "put"}, "/v1/channels/{name}:test": {"post"},
		"/v1/notify-rules": {"get"}, "/v1/notify-rules/{name}": {"delete", "put"},
	}
	for path, item := range paths {
		var methods []string
		for m := range item.(map[string]any) {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		if !slices.Equal(methods, want[path]) {
			t.Errorf("%s has %v, want %v (one path per resource)", path, methods, want[path])
		}
	}
	if len(paths) != len(want) {
		t.Errorf("%d paths, want %d", len(paths), len(want))
	}
	if bytes.Contains(mustJSON(t, doc), []byte("InternalService")) {
		t.Error("the document mentions InternalService")
	}
}

// Calendars and freezes travel as proto JSON; a job refers to calendars in
// the job file's form.
func TestCalendarsAndFreezesOverHTTP(t *testing.T) {
	e := start(t)
	cal := e.ok("PUT", "/v1/calendars/us", `{"timezone": "America/New_York", "entries": [{"date": "2026-12-25", "note": "Christmas"}, {"days": ["sat", "sun"]}]}`)
	if dig(cal, "calendar", "spec", "name") != "us" || dig(cal, "created") != true {
		t.Fatalf("PUT calendar: %v", cal)
	}
	if got := e.ok("GET", "/v1/calendars/us", ""); dig(got, "calendar", "entry_count") != float64(2) {
		t.Fatalf("GET calendar: %v", got)
	}
	job := e.ok("PUT", "/v1/jobs/report", `{"schedule": "0 9 * * *", "http": {"url": "http://x.test/"}, "calendars": {"exclude": ["us"]}}`)
	if ex := dig(job, "job", "spec", "calendars", "exclude"); ex == nil || ex.([]any)[0] != "us" {
		t.Fatalf("PUT job: %v", job)
	}
	code, doc := e.do("DELETE", "/v1/calendars/us", "", "alice")
	if code != http.StatusBadRequest || !strings.Contains(doc["message"].(string), `job "report"`) {
		t.Fatalf("DELETE calendar in use: %d %v", code, doc)
	}
	fr := e.ok("POST", "/v1/freezes", `{"name": "year-end", "from": "2099-12-20T00:00:00Z", "to": "2100-01-02T00:00:00Z", "defer": true}`)
	if dig(fr, "freeze", "created_by") != "alice" {
		t.Fatalf("POST freeze: %v", fr)
	}
	if l := e.ok("GET", "/v1/freezes", ""); len(l["freezes"].([]any)) != 1 {
		t.Fatalf("GET freezes: %v", l)
	}
	e.ok("DELETE", "/v1/freezes/year-end", "")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCrossSiteWritesAreRefused(t *testing.T) {
	e := start(t)
	e.ok("PUT", "/v1/jobs/billing", billing)
	send := func(origin, site string) int {
		req, _ := http.NewRequest("POST", e.url+"/v1/jobs/billing:pause", strings.NewReader(`{"note": "x"}`))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Authorization", "Bearer alice") // refused all the same
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("https://evil.example", "cross-site"); code != http.StatusForbidden {
		t.Fatalf("a cross-site pause: %d, want 403", code)
	}
	if code := send("https://evil.example", ""); code != http.StatusForbidden {
		t.Fatalf("a pause from another origin: %d, want 403", code)
	}
	if doc := e.ok("GET", "/v1/jobs/billing", ""); dig(doc, "job", "spec", "paused") != nil {
		t.Fatalf("a refused cross-site write paused the job: %v", doc)
	}
	if code := send("", "same-origin"); code != http.StatusOK {
		t.Fatalf("a same-origin pause: %d, want 200", code)
	}
}
