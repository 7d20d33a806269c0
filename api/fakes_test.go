package api

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fakeStore is a Store and a Registry in one: it applies commands to a map
// with the FSM's result codes, and records every command and barrier so
// tests can tell what reached "Raft".
type fakeStore struct {
	mu         sync.Mutex // guards everything below
	jobs       map[string]*pb.Job
	commands   []*pb.Command
	barriers   int
	queries    []fsm.ListQuery
	applyErr   error // returned by Apply instead of applying
	barrierErr error // returned by ReadBarrier
	applyHook  func(*pb.Command)
	token      uint64
	runs       []*pb.Run // newest first
	runQueries []fsm.RunQuery
	auditLimit uint32
	audit      []*pb.AuditRecord // newest first
	auditQuery []fsm.AuditQuery
}

func newFakeStore() *fakeStore { return &fakeStore{jobs: map[string]*pb.Job{}} }

// putJob stores job as the registry would hold it.
func (f *fakeStore) putJob(job *pb.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[job.GetSpec().GetName()] = proto.CloneOf(job)
}

// addRun puts r on top of the ledger (it is the newest).
func (f *fakeStore) addRun(r *pb.Run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append([]*pb.Run{proto.CloneOf(r)}, f.runs...)
}

func (f *fakeStore) Run(id string) (*pb.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runs {
		if r.GetId() == id {
			return proto.CloneOf(r), nil
		}
	}
	return nil, fmt.Errorf("run %q: %w", id, fsm.ErrNotFound)
}

// RunsPage pages by job and limit only; every run counts as a live job's.
func (f *fakeStore) RunsPage(q fsm.RunQuery) fsm.RunPage {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runQueries = append(f.runQueries, q)
	var out []*pb.Run
	for _, r := range f.runs {
		if (q.Job == "" || r.GetJob() == q.Job) && (q.Limit <= 0 || len(out) < q.Limit) {
			out = append(out, proto.CloneOf(r))
		}
	}
	return fsm.RunPage{Runs: out, Scanned: len(f.runs)}
}

// RunInScope holds for every run of a job whose labels include selector.
func (f *fakeStore) RunInScope(run *pb.Run, selector map[string]string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[run.GetJob()]
	return ok && fsm.SelectorMatches(j.GetSpec().GetLabels(), selector)
}

func (f *fakeStore) lastRunQuery() fsm.RunQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runQueries[len(f.runQueries)-1]
}

func (f *fakeStore) Apply(_ context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	f.mu.Lock()
	hook := f.applyHook
	f.commands = append(f.commands, proto.CloneOf(cmd))
	if f.applyErr != nil {
		defer f.mu.Unlock()
		return nil, f.applyErr
	}
	f.mu.Unlock()
	if hook != nil {
		hook(cmd)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch k := cmd.GetKind().(type) {
	case *pb.Command_PutJob:
		return f.put(k.PutJob), nil
	case *pb.Command_DeleteJob:
		return f.delete(k.DeleteJob), nil
	case *pb.Command_SetPaused:
		return f.setPaused(k.SetPaused), nil
	case *pb.Command_CancelRun:
		return f.cancelRun(k.CancelRun), nil
	case *pb.Command_SetAudit:
		if !k.SetAudit.GetEnableOnly() || f.auditLimit == 0 {
			f.auditLimit = k.SetAudit.GetLimit()
		}
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Changed: true}, nil
	}
	return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_MALFORMED, Message: "no command"}, nil
}

func (f *fakeStore) put(c *pb.PutJobCommand) *pb.CommandResult {
	name := c.GetSpec().GetName()
	old, exists := f.jobs[name]
	switch {
	case exists && c.GetMode() == pb.PutMode_PUT_MODE_CREATE:
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, Message: "job \"" + name + "\" already exists"}
	case !exists && c.GetMode() == pb.PutMode_PUT_MODE_UPDATE:
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_NOT_FOUND, Message: "job \"" + name + "\" not found"}
	case exists && c.GetExpectedVersion() != 0 && c.GetExpectedVersion() != old.GetVersion():
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, Message: "version mismatch"}
	case exists && proto.Equal(old.GetSpec(), c.GetSpec()):
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Job: proto.CloneOf(old)}
	}
	job := &pb.Job{Spec: proto.CloneOf(c.GetSpec()), Version: old.GetVersion() + 1, Generation: 1}
	f.jobs[name] = job
	return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Job: proto.CloneOf(job), Changed: true, Created: !exists}
}

func (f *fakeStore) delete(c *pb.DeleteJobCommand) *pb.CommandResult {
	old, exists := f.jobs[c.GetName()]
	switch {
	case !exists:
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_NOT_FOUND, Message: "job \"" + c.GetName() + "\" not found"}
	case c.GetExpectedVersion() != 0 && c.GetExpectedVersion() != old.GetVersion():
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, Message: "version mismatch"}
	}
	delete(f.jobs, c.GetName())
	return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Changed: true}
}

func (f *fakeStore) setPaused(c *pb.SetPausedCommand) *pb.CommandResult {
	job, exists := f.jobs[c.GetName()]
	if !exists {
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_NOT_FOUND, Message: "job \"" + c.GetName() + "\" not found"}
	}
	job.Spec.Paused, job.Spec.PauseNote = c.GetPaused(), c.GetNote()
	job.Version++
	return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Job: proto.CloneOf(job), Changed: true}
}

// cancelRun answers as the FSM does: NOT_FOUND, RUN_FINISHED, or the run
// cancelled.
func (f *fakeStore) cancelRun(c *pb.CancelRunCommand) *pb.CommandResult {
	for i, r := range f.runs {
		if r.GetId() != c.GetRunId() {
			continue
		}
		if s := r.GetState(); s != pb.RunState_RUN_STATE_DISPATCHED && s != pb.RunState_RUN_STATE_RETRYING {
			return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_RUN_FINISHED, Message: "run \"" + r.GetId() + "\" is finished"}
		}
		r = proto.CloneOf(r)
		r.State, r.Reason = pb.RunState_RUN_STATE_CANCELLED, fsm.ReasonCancelRequested
		f.runs[i] = r
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Changed: true, Run: proto.CloneOf(r)}
	}
	return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_NOT_FOUND, Message: "run \"" + c.GetRunId() + "\" not found"}
}

func (f *fakeStore) AuditLimit() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.auditLimit
}

func (f *fakeStore) setAuditLimit(n uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auditLimit = n
}

func (f *fakeStore) ListAudit(q fsm.AuditQuery) []*pb.AuditRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auditQuery = append(f.auditQuery, q)
	var out []*pb.AuditRecord
	for _, r := range f.audit {
		if (q.Job == "" || r.GetJob() == q.Job) && (q.Limit <= 0 || len(out) < q.Limit) {
			out = append(out, proto.CloneOf(r))
		}
	}
	return out
}

func (f *fakeStore) ReadBarrier(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.barriers++
	return f.barrierErr
}

func (f *fakeStore) Job(name string) (*pb.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	job, ok := f.jobs[name]
	if !ok {
		return nil, fsm.ErrNotFound
	}
	return proto.CloneOf(job), nil
}

func (f *fakeStore) ListJobs(q fsm.ListQuery) ([]*pb.Job, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	names := make([]string, 0, len(f.jobs))
	for name := range f.jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*pb.Job
	for _, name := range names {
		job := f.jobs[name]
		if name <= q.After || !hasLabels(job, q.Labels) {
			continue
		}
		if q.Limit > 0 && len(out) == q.Limit {
			return out, out[len(out)-1].GetSpec().GetName()
		}
		out = append(out, proto.CloneOf(job))
	}
	return out, ""
}

func hasLabels(job *pb.Job, want map[string]string) bool {
	for k, v := range want {
		if got, ok := job.GetSpec().GetLabels()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (f *fakeStore) FencingToken() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token
}

func (f *fakeStore) proposed() []*pb.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pb.Command(nil), f.commands...)
}

func (f *fakeStore) barrierCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.barriers
}

func (f *fakeStore) lastQuery() fsm.ListQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[len(f.queries)-1]
}

// fakeCluster records membership calls.
type fakeCluster struct {
	mu     sync.Mutex // guards everything below
	status *pb.NodeStatus
	calls  []string
	err    error
	leader *pb.ServerRef
}

func (c *fakeCluster) Status() *pb.NodeStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

func (c *fakeCluster) AddVoter(_ context.Context, id, addr string) error {
	return c.record("add " + id + " " + addr)
}

func (c *fakeCluster) RemoveServer(_ context.Context, id string) error {
	return c.record("remove " + id)
}

func (c *fakeCluster) TransferLeadership(_ context.Context, id string) (*pb.ServerRef, error) {
	if err := c.record("transfer " + id); err != nil {
		return nil, err
	}
	return c.leader, nil
}

func (c *fakeCluster) record(call string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
	return c.err
}

func (c *fakeCluster) recorded() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}
