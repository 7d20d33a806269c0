package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/api/gateway"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/ui"
)

// fakeNode stands in for a node's HTTP port: the routes of the JSON API the
// pages call (/v1/..., /status), answering as grpc-gateway does (the
// proto's field names, gRPC-status errors, Bearer tokens), over in-memory
// state; and the real UI handler, whose run events come from a real
// RunService and RunHub over an in-process gRPC server that checks tokens
// as the ACL interceptor does. Tests drive it as the scheduler would:
// fire and finish runs.
type fakeNode struct {
	t   *testing.T
	url string
	hub *api.RunHub

	mu     sync.Mutex
	acl    bool
	tokens map[string]fakeToken // by secret
	jobs   map[string]*pb.Job
	runs   []*pb.Run // oldest first
	audit  []auditRecord
	token  uint64
	index  uint64
	// hour is the last hour's run counts /status reports: every run
	// fired, as the replicated counts keep them, pruned or not.
	hour ops.RunCounts
}

type fakeToken struct{ name, role string }

// auditRecord is AuditRecord as the JSON API renders it.
type auditRecord struct {
	Seq           string        `json:"seq"`
	AtUnixNano    string        `json:"at_unix_nano"`
	Principal     string        `json:"principal"`
	Action        string        `json:"action"`
	Job           string        `json:"job,omitempty"`
	RunID         string        `json:"run_id,omitempty"`
	VersionBefore string        `json:"version_before,omitempty"`
	VersionAfter  string        `json:"version_after,omitempty"`
	Changes       []auditChange `json:"changes,omitempty"`
	Index         string        `json:"index"`
}

type auditChange struct {
	Field  string `json:"field"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// apiJSON is the JSON API's own marshaler: specs in the job file's form.
var apiJSON = gateway.NewMarshaler()

// newFakeNode serves a fake node on loopback until the test ends; with
// tokens, ACLs are on.
func newFakeNode(t *testing.T, tokens map[string]fakeToken) *fakeNode {
	t.Helper()
	f := &fakeNode{t: t, hub: api.NewRunHub(), acl: tokens != nil, tokens: tokens, jobs: map[string]*pb.Job{}}
	h, err := ui.New(ui.Config{Identity: f, Runs: f.runService(t), Version: "v0.0.0-test"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(ui.Prefix, h)
	mux.HandleFunc("GET /status", f.status)
	mux.Handle("/v1/", http.HandlerFunc(f.serveAPI))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		f.hub.Close()
		srv.Close()
	})
	f.url = srv.URL
	return f
}

// runService is a real RunService, fed by the hub, behind a real gRPC
// server that authenticates as the node's does.
func (f *fakeNode) runService(t *testing.T) pb.RunServiceClient {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		secret := ""
		if v := md.Get("authorization"); len(v) > 0 {
			secret = strings.TrimPrefix(v[0], "Bearer ")
		}
		if _, err := f.principal(secret, "read"); err != nil {
			return err
		}
		return h(srv, ss)
	}))
	pb.RegisterRunServiceServer(gs, api.NewRunService(api.Deps{Barrier: noBarrier{}, Ledger: f, Hub: f.hub}))
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///fake",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
	})
	return pb.NewRunServiceClient(conn)
}

type noBarrier struct{}

func (noBarrier) ReadBarrier(context.Context) error { return nil }

var roleRank = map[string]int{"read": 1, "write": 2, "management": 3}

// principal is who secret is, if its role reaches need.
func (f *fakeNode) principal(secret, need string) (fakeToken, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.acl {
		return fakeToken{name: "anonymous", role: "management"}, nil
	}
	tok, ok := f.tokens[secret]
	if !ok {
		return fakeToken{}, status.Error(codes.Unauthenticated, "unknown ACL token")
	}
	if roleRank[tok.role] < roleRank[need] {
		return fakeToken{}, status.Errorf(codes.PermissionDenied, "ACL token %q has role %s: needs role %s", tok.name, tok.role, need)
	}
	return tok, nil
}

// WhoAmI is the node's ui.Identity.
func (f *fakeNode) WhoAmI(_ context.Context, bearer string) (string, string, error) {
	if bearer == "" && f.acl {
		return "", "", status.Error(codes.Unauthenticated, "this node requires an ACL token")
	}
	p, err := f.principal(bearer, "")
	return p.name, p.role, err
}

// Run, RunsPage and RunInScope make the fake the RunService's ledger.
func (f *fakeNode) Run(id string) (*pb.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runs {
		if r.GetId() == id {
			return r, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "run %q not found", id)
}

func (f *fakeNode) RunsPage(q fsm.RunQuery) fsm.RunPage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*pb.Run
	for _, r := range slices.Backward(f.runs) {
		if (q.Job == "" || r.GetJob() == q.Job) && len(out) < q.Limit {
			out = append(out, proto.Clone(r).(*pb.Run))
		}
	}
	return fsm.RunPage{Runs: out}
}

// RunInScope: the fake's runs are all live jobs' runs, and its tokens
// carry no selector.
func (f *fakeNode) RunInScope(*pb.Run, map[string]string) bool { return true }

// apply registers spec, as "setup".
func (f *fakeNode) apply(spec *pb.JobSpec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := timestamppb.Now()
	f.jobs[spec.GetName()] = &pb.Job{Spec: spec, Generation: 1, Version: 1, CreatedAt: now, UpdatedAt: now,
		Status: &pb.JobStatus{NextFireUnix: time.Now().Add(time.Hour).Unix()}}
	f.record("setup", "create", spec.GetName(), "", 0, 1, auditChange{Field: "schedule", After: spec.GetSchedule()})
}

// fire commits a run of job in state, with a fresh token, as a leader
// would, and publishes it.
func (f *fakeNode) fire(job string, kind pb.FireKind, state pb.RunState) *pb.Run {
	f.mu.Lock()
	run := f.newRunLocked(job, kind, state)
	f.mu.Unlock()
	f.hub.RunsChanged(fsm.Origin{}, []*pb.Run{proto.Clone(run).(*pb.Run)})
	return run
}

func (f *fakeNode) newRunLocked(job string, kind pb.FireKind, state pb.RunState) *pb.Run {
	f.token++
	now := time.Now()
	run := &pb.Run{
		Id: fmt.Sprintf("%s-%d", job, f.token), Job: job, Generation: 1, SlotUnix: now.Unix(), Kind: kind, State: state,
		CreatedAtUnixNano: now.UnixNano(),
		Attempts: []*pb.Attempt{{Number: 1, Token: f.token, Kind: kind, NodeId: "n1", Term: 2,
			DispatchedAtUnixNano: now.UnixNano(), State: state, Output: []byte("ok\n")}},
	}
	if state != pb.RunState_RUN_STATE_DISPATCHED {
		run.FinishedAtUnixNano = now.UnixNano()
	}
	f.runs = append(f.runs, run)
	f.hour.Fires++
	if state == pb.RunState_RUN_STATE_FAILED {
		f.hour.Failures++
	}
	if j := f.jobs[job]; j != nil {
		st := j.GetStatus()
		st.LatestToken, st.LastRunId, st.LastOutcome = f.token, run.GetId(), state
		if kind == pb.FireKind_FIRE_KIND_SCHEDULED {
			st.CursorUnix = run.GetSlotUnix()
		}
		switch state {
		case pb.RunState_RUN_STATE_SUCCEEDED:
			st.Succeeded++
		case pb.RunState_RUN_STATE_FAILED:
			st.Failed++
		}
	}
	return run
}

// progress records a remote worker's report of run's attempt, as the
// leader commits it, and publishes the run.
func (f *fakeNode) progress(runID string, pct uint32, message string) {
	f.mu.Lock()
	var changed *pb.Run
	for _, r := range f.runs {
		if r.GetId() == runID {
			a := r.GetAttempts()[len(r.GetAttempts())-1]
			a.Progress, a.ProgressMessage, a.ProgressAtUnixNano = &pct, message, time.Now().UnixNano()
			changed = proto.Clone(r).(*pb.Run)
		}
	}
	f.mu.Unlock()
	f.hub.RunsChanged(fsm.Origin{}, []*pb.Run{changed})
}

// prune forgets every finished run, as a history limit does; the run
// counts keep them.
func (f *fakeNode) prune() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = slices.DeleteFunc(f.runs, func(r *pb.Run) bool {
		return r.GetState() != pb.RunState_RUN_STATE_DISPATCHED && r.GetState() != pb.RunState_RUN_STATE_RETRYING
	})
}

// record appends an audit record; f.mu is held.
func (f *fakeNode) record(who, action, job, runID string, before, after uint64, changes ...auditChange) {
	f.index++
	f.audit = append(f.audit, auditRecord{
		Seq: strconv.Itoa(len(f.audit) + 1), AtUnixNano: strconv.FormatInt(time.Now().UnixNano(), 10),
		Principal: who, Action: action, Job: job, RunID: runID,
		VersionBefore: strconv.FormatUint(before, 10), VersionAfter: strconv.FormatUint(after, 10),
		Changes: changes, Index: strconv.FormatUint(f.index, 10),
	})
}

func (f *fakeNode) status(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	idx := f.index + 10
	writeJSON(w, map[string]any{
		"id":              "n1",
		"address":         "127.0.0.1:7001",
		"state":           "leader",
		"leader":          map[string]string{"id": "n1", "address": "127.0.0.1:7001"},
		"term":            2,
		"commit_index":    idx,
		"applied_index":   idx,
		"last_log_index":  idx,
		"fencing_token":   f.token,
		"ready":           true,
		"command_version": 2,
		"last_hour":       f.hour,
		"servers": []map[string]any{
			{"id": "n1", "address": "127.0.0.1:7001", "suffrage": "voter", "leader": true, "contact": "reachable"},
			{"id": "n2", "address": "127.0.0.1:7002", "suffrage": "voter", "leader": false, "contact": "reachable"},
			{"id": "n3", "address": "127.0.0.1:7003", "suffrage": "voter", "leader": false, "contact": "unreachable",
				"last_contact": "2026-03-29T00:58:30Z"},
		},
	})
}

// serveAPI answers the JSON API routes the pages use.
func (f *fakeNode) serveAPI(w http.ResponseWriter, r *http.Request) {
	secret := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	need := "read"
	if r.Method != http.MethodGet {
		need = "write"
	}
	if r.URL.Path == "/v1/audit" {
		need = "management"
	}
	who, err := f.principal(secret, need)
	if err != nil {
		writeStatus(w, err)
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost {
		_ = json.NewDecoder(r.Body).Decode(&body)
	}
	f.mu.Lock()
	reply, changed, err := f.route(r, who.name, body)
	f.mu.Unlock()
	if err != nil {
		writeStatus(w, err)
		return
	}
	if changed != nil {
		f.hub.RunsChanged(fsm.Origin{}, []*pb.Run{changed})
	}
	writeJSON(w, reply)
}

// route serves one call with f.mu held; changed is a run to publish.
func (f *fakeNode) route(r *http.Request, who string, body map[string]any) (reply any, changed *pb.Run, err error) {
	p := r.URL.Path
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && p == "/v1/jobs":
		return f.listJobs(q), nil, nil
	case r.Method == http.MethodGet && p == "/v1/runs":
		limit, _ := strconv.Atoi(q.Get("limit"))
		var runs []json.RawMessage
		for _, run := range slices.Backward(f.runs) {
			if (q.Get("job") == "" || run.GetJob() == q.Get("job")) && (limit == 0 || len(runs) < limit) {
				runs = append(runs, protoJSON(run))
			}
		}
		return map[string]any{"runs": runs}, nil, nil
	case r.Method == http.MethodGet && p == "/v1/audit":
		var recs []auditRecord
		for _, rec := range slices.Backward(f.audit) {
			if q.Get("job") == "" || rec.Job == q.Get("job") {
				recs = append(recs, rec)
			}
		}
		return map[string]any{"records": recs}, nil, nil
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/v1/runs/") && strings.HasSuffix(p, ":cancel"):
		return f.cancel(strings.TrimSuffix(strings.TrimPrefix(p, "/v1/runs/"), ":cancel"), who)
	case strings.HasPrefix(p, "/v1/jobs/"):
		return f.jobRoute(r.Method, strings.TrimPrefix(p, "/v1/jobs/"), who, body)
	}
	return nil, nil, status.Errorf(codes.NotFound, "no route %s %s", r.Method, p)
}

func (f *fakeNode) listJobs(q map[string][]string) any {
	var jobs []json.RawMessage
	names := make([]string, 0, len(f.jobs))
	for n := range f.jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		j := f.jobs[n]
		match := true
		for k, v := range q {
			if strings.HasPrefix(k, "label_selector[") {
				key := strings.TrimSuffix(strings.TrimPrefix(k, "label_selector["), "]")
				match = match && j.GetSpec().GetLabels()[key] == v[0]
			}
		}
		if match {
			jobs = append(jobs, protoJSON(j))
		}
	}
	return map[string]any{"jobs": jobs}
}

func (f *fakeNode) jobRoute(method, rest, who string, body map[string]any) (any, *pb.Run, error) {
	name, verb, _ := strings.Cut(rest, ":")
	name, sub, _ := strings.Cut(name, "/")
	j := f.jobs[name]
	if j == nil {
		return nil, nil, status.Errorf(codes.NotFound, "job %q not found", name)
	}
	spec := j.GetSpec()
	switch {
	case method == http.MethodGet && sub == "next":
		// Daily at 02:00 in Berlin across the spring-forward: on 29 March
		// 02:00 does not exist and the slot fires at 03:00 CEST, as
		// time.Date normalizes it.
		var times []string
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			return nil, nil, err
		}
		for day := 26; day < 36; day++ {
			times = append(times, time.Date(2026, 3, day, 2, 0, 0, 0, berlin).UTC().Format(time.RFC3339))
		}
		return map[string]any{"times": times}, nil, nil
	case method == http.MethodGet:
		return map[string]any{"job": protoJSON(j)}, nil, nil
	case method == http.MethodDelete:
		delete(f.jobs, name)
		f.record(who, "delete", name, "", j.GetVersion(), 0)
		return map[string]any{}, nil, nil
	case verb == "pause":
		note, _ := body["note"].(string)
		spec.Paused, spec.PauseNote = true, note
		j.Version++
		f.record(who, "pause", name, "", j.GetVersion()-1, j.GetVersion(), auditChange{Field: "paused", Before: "false", After: "true"},
			auditChange{Field: "pause_note", After: note})
		return map[string]any{"job": protoJSON(j)}, nil, nil
	case verb == "resume":
		spec.Paused, spec.PauseNote = false, ""
		j.Version++
		f.record(who, "resume", name, "", j.GetVersion()-1, j.GetVersion(), auditChange{Field: "paused", Before: "true", After: "false"})
		return map[string]any{"job": protoJSON(j)}, nil, nil
	case verb == "trigger":
		if force, _ := body["force"].(bool); spec.GetPaused() && !force {
			return nil, nil, status.Errorf(codes.FailedPrecondition, "job %q is paused: resume it or force the trigger", name)
		}
		run := f.newRunLocked(name, pb.FireKind_FIRE_KIND_MANUAL, pb.RunState_RUN_STATE_DISPATCHED)
		f.record(who, "trigger", name, run.GetId(), j.GetVersion(), j.GetVersion())
		return map[string]any{"run": protoJSON(run)}, proto.Clone(run).(*pb.Run), nil
	}
	return nil, nil, status.Errorf(codes.NotFound, "no route %s /v1/jobs/%s", method, rest)
}

func (f *fakeNode) cancel(id, who string) (any, *pb.Run, error) {
	for _, run := range f.runs {
		if run.GetId() != id {
			continue
		}
		if run.GetState() != pb.RunState_RUN_STATE_DISPATCHED && run.GetState() != pb.RunState_RUN_STATE_RETRYING {
			return nil, nil, status.Errorf(codes.FailedPrecondition, "run %q is finished", id)
		}
		run.State, run.Reason, run.FinishedAtUnixNano = pb.RunState_RUN_STATE_CANCELLED, "cancel_requested", time.Now().UnixNano()
		run.GetAttempts()[len(run.GetAttempts())-1].State = pb.RunState_RUN_STATE_CANCELLED
		f.record(who, "cancel", run.GetJob(), id, 0, 0)
		return map[string]any{"run": protoJSON(run)}, proto.Clone(run).(*pb.Run), nil
	}
	return nil, nil, status.Errorf(codes.NotFound, "run %q not found", id)
}

func protoJSON(m proto.Message) json.RawMessage {
	b, err := apiJSON.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeStatus answers as grpc-gateway does.
func writeStatus(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	code := map[codes.Code]int{
		codes.Unauthenticated: 401, codes.PermissionDenied: 403, codes.NotFound: 404,
		codes.FailedPrecondition: 400, codes.InvalidArgument: 400,
	}[st.Code()]
	if code == 0 {
		code = 500
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": st.Code(), "message": st.Message(), "details": []any{}})
}
