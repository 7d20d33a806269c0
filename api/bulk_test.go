package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// bulkStore is a fakeStore with ApplyBulk; fail makes the command of a
// job name fail with that error instead of applying.
type bulkStore struct {
	*fakeStore
	mu   sync.Mutex // guards n
	n    int
	err  error // returned by ApplyBulk itself
	fail map[string]error
}

func (b *bulkStore) ApplyBulk(ctx context.Context, cmds []*pb.Command) ([]cluster.BulkResult, error) {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	if b.err != nil {
		return nil, b.err
	}
	out := make([]cluster.BulkResult, len(cmds))
	for i, cmd := range cmds {
		if err := b.fail[cmd.GetPutJob().GetSpec().GetName()]; err != nil {
			out[i] = cluster.BulkResult{Err: err}
			continue
		}
		res, err := b.Apply(ctx, cmd)
		out[i] = cluster.BulkResult{Result: res, Err: err}
	}
	return out, nil
}

// calls is how many times ApplyBulk was called.
func (b *bulkStore) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func newBulkHarness(t *testing.T, configure func(*bulkStore, *Deps)) (*harness, *bulkStore) {
	var bs *bulkStore
	h := newHarnessConfig(t, func(c *Deps) {
		bs = &bulkStore{fakeStore: c.Store.(*fakeStore)}
		c.Store = bs
		if configure != nil {
			configure(bs, c)
		}
	})
	return h, bs
}

func specsNamed(names ...string) []*pb.JobSpec {
	out := make([]*pb.JobSpec, len(names))
	for i, n := range names {
		out[i] = validSpec(n)
	}
	return out
}

func TestApplyJobsResultPerSpec(t *testing.T) {
	h, bs := newBulkHarness(t, nil)
	ctx := testCtx(t)
	same := validSpec("same")
	if _, err := h.jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: same}); err != nil {
		t.Fatal(err)
	}
	changed := validSpec("changed")
	if _, err := h.jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: changed}); err != nil {
		t.Fatal(err)
	}
	changed.Schedule = "0 3 * * *"
	bs.fail = map[string]error{"lost": cluster.ErrIndeterminate}
	specs := []*pb.JobSpec{validSpec("new"), same, changed, validSpec("lost")}
	resp, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: specs})
	if err != nil {
		t.Fatalf("ApplyJobs: %v", err)
	}
	res := resp.GetResults()
	if len(res) != len(specs) {
		t.Fatalf("%d results for %d specs", len(res), len(specs))
	}
	want := []struct {
		created, changed bool
		version          uint64
	}{{true, true, 1}, {false, false, 1}, {false, true, 2}}
	for i, w := range want {
		r := res[i]
		if r.GetCode() != 0 || r.GetMessage() != "" || r.GetJob().GetSpec().GetName() != specs[i].GetName() {
			t.Errorf("results[%d] = %v, want the job %q applied", i, r, specs[i].GetName())
			continue
		}
		if r.GetCreated() != w.created || r.GetChanged() != w.changed || r.GetJob().GetVersion() != w.version {
			t.Errorf("results[%d] (%s): created=%v changed=%v version=%d, want %+v", i, specs[i].GetName(),
				r.GetCreated(), r.GetChanged(), r.GetJob().GetVersion(), w)
		}
	}
	lost := res[3]
	if codes.Code(lost.GetCode()) != codes.Unavailable || !strings.Contains(lost.GetMessage(), `job "lost"`) || lost.GetJob() != nil {
		t.Errorf("results[3] = %v, want Unavailable naming job \"lost\" and no job", lost)
	}
	for _, cmd := range h.store.proposed()[2:] {
		if mode := cmd.GetPutJob().GetMode(); mode != pb.PutMode_PUT_MODE_UPSERT || cmd.GetProposedAtUnixNano() != 0 {
			t.Errorf("proposed %v, want an UPSERT left for the leader to stamp", cmd)
		}
		if cmd.GetPutJob().GetSpec().GetTimezone() != "UTC" {
			t.Errorf("proposed spec %v is not normalized", cmd.GetPutJob().GetSpec())
		}
	}
	if bs.calls() != 1 {
		t.Errorf("%d ApplyBulk calls, want 1", bs.calls())
	}
}

func TestApplyJobsFillsNextFire(t *testing.T) {
	h, bs := newBulkHarness(t, nil)
	bs.applyHook = func(*pb.Command) {}
	ctx := testCtx(t)
	resp, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: specsNamed("a")})
	if err != nil {
		t.Fatal(err)
	}
	job := resp.GetResults()[0].GetJob()
	one, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := job.GetStatus().GetNextFireUnix(), one.GetJob().GetStatus().GetNextFireUnix(); got != want {
		t.Errorf("next fire %d in the ApplyJobs answer, %d from GetJob", got, want)
	}
}

func TestApplyJobsInvalidSpecRefusesTheWholeCall(t *testing.T) {
	h, bs := newBulkHarness(t, nil)
	ctx := testCtx(t)
	bad := validSpec("broken")
	bad.Schedule = "every tuesday"
	worse := validSpec("Worse Name")
	worse.Http.Url = "not a url"
	specs := []*pb.JobSpec{validSpec("ok"), bad, validSpec("fine"), worse}
	_, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: specs})
	st := wantCode(t, err, codes.InvalidArgument)
	fields := badRequestFields(t, st)
	for _, f := range []string{"specs[1].schedule", "specs[3].name", "specs[3].http.url"} {
		if !slices.Contains(fields, f) {
			t.Errorf("violations on %v, want one on %q", fields, f)
		}
	}
	msg := st.Message()
	if !strings.Contains(msg, "specs[1]") || !strings.Contains(msg, `"broken"`) || !strings.Contains(msg, "schedule") ||
		!strings.Contains(msg, "1 more") || strings.Contains(msg, "\n") {
		t.Errorf("message %q should name specs[1], job \"broken\", its field and the other invalid spec, on one line", msg)
	}
	if n := len(h.store.proposed()); n != 0 || bs.calls() != 0 {
		t.Errorf("a refused batch proposed %d commands in %d calls, want none", n, bs.calls())
	}
}

func TestApplyJobsRefusesDuplicateNamesAndEmptySpecs(t *testing.T) {
	h, _ := newBulkHarness(t, nil)
	ctx := testCtx(t)
	for name, tc := range map[string]struct {
		specs  []*pb.JobSpec
		fields []string
	}{
		"duplicate": {specsNamed("a", "b", "a"), []string{"specs[2].name"}},
		// A nil element travels as an empty spec.
		"empty": {[]*pb.JobSpec{validSpec("a"), nil}, []string{"specs[1].name", "specs[1].schedule", "specs[1].http"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: tc.specs})
			st := wantCode(t, err, codes.InvalidArgument)
			if fields := badRequestFields(t, st); !slices.Equal(fields, tc.fields) {
				t.Errorf("violations on %v, want %q (message %q)", fields, tc.fields, st.Message())
			}
		})
	}
	if n := len(h.store.proposed()); n != 0 {
		t.Errorf("refused calls proposed %d commands", n)
	}
}

func TestApplyJobsCap(t *testing.T) {
	h, _ := newBulkHarness(t, nil)
	ctx := testCtx(t)
	names := make([]string, MaxApplyJobs+1)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
	}
	_, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: specsNamed(names...)})
	st := wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"specs"}) || !strings.Contains(st.Message(), "1000") {
		t.Errorf("violations on %v, message %q; want the field specs and the cap", fields, st.Message())
	}
	if n := len(h.store.proposed()); n != 0 {
		t.Fatalf("an oversized call proposed %d commands", n)
	}
	resp, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: specsNamed(names[:MaxApplyJobs]...)})
	if err != nil || len(resp.GetResults()) != MaxApplyJobs {
		t.Fatalf("a call of exactly %d: %d results, %v", MaxApplyJobs, len(resp.GetResults()), err)
	}
}

func TestApplyJobsWithoutBulkStoreAppliesEach(t *testing.T) {
	h := newHarness(t)
	resp, err := h.jobs.ApplyJobs(testCtx(t), &pb.ApplyJobsRequest{Specs: specsNamed("a", "b", "c")})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.GetResults() {
		if r.GetCode() != 0 || !r.GetCreated() || r.GetJob().GetSpec().GetName() != string(rune('a'+i)) {
			t.Errorf("results[%d] = %v, want job %c created", i, r, 'a'+i)
		}
	}
	if n := len(h.store.proposed()); n != 3 {
		t.Errorf("%d commands proposed, want 3", n)
	}
}

// bulkNode is a harness with a BulkStore and a view of who leads.
type bulkNode struct {
	*harness
	store *bulkStore
	lead  *fakeLeadership
}

func newBulkNode(t *testing.T, leader bool) *bulkNode {
	n := &bulkNode{lead: &fakeLeadership{leader: leader}}
	n.harness, n.store = newBulkHarness(t, func(_ *bulkStore, c *Deps) { c.Leadership = n.lead })
	return n
}

func TestApplyJobsForwardedFromFollower(t *testing.T) {
	leader := newBulkNode(t, true)
	follower := newBulkNode(t, false)
	follower.lead.conn = leader.conn
	resp, err := follower.jobs.ApplyJobs(testCtx(t), &pb.ApplyJobsRequest{Specs: specsNamed("a", "b")})
	if err != nil {
		t.Fatalf("ApplyJobs through a follower: %v", err)
	}
	if len(resp.GetResults()) != 2 || !resp.GetResults()[1].GetCreated() {
		t.Errorf("results %v, want both created", resp.GetResults())
	}
	if leader.store.calls() != 1 || follower.store.calls() != 0 || follower.lead.dialed() != 1 {
		t.Errorf("calls: leader %d, follower %d, forwards %d; want 1, 0, 1",
			leader.store.calls(), follower.store.calls(), follower.lead.dialed())
	}
}

func TestApplyJobsForwardsWhenTheStoreDoesNotLead(t *testing.T) {
	leader := newBulkNode(t, true)
	stale := newBulkNode(t, true) // believes it leads; Raft knows better
	stale.store.err = fmt.Errorf("apply bulk: %w", cluster.ErrNotLeader)
	stale.lead.conn = leader.conn
	if _, err := stale.jobs.ApplyJobs(testCtx(t), &pb.ApplyJobsRequest{Specs: specsNamed("a")}); err != nil {
		t.Fatalf("ApplyJobs: %v", err)
	}
	if leader.store.calls() != 1 || stale.lead.dialed() != 1 {
		t.Errorf("leader calls %d, forwards %d; want 1 and 1", leader.store.calls(), stale.lead.dialed())
	}
}

func TestApplyJobsForwardsOnlyOnce(t *testing.T) {
	// Two nodes that each think the other leads: the second hop refuses.
	a, b := newBulkNode(t, false), newBulkNode(t, false)
	a.lead.conn, b.lead.conn = b.conn, a.conn
	_, err := a.jobs.ApplyJobs(testCtx(t), &pb.ApplyJobsRequest{Specs: specsNamed("x")})
	st := wantCode(t, err, codes.Unavailable)
	if info := errorInfo(st); info == nil || info.GetReason() != cluster.ReasonNotLeader {
		t.Errorf("error %v, want NOT_LEADER", st)
	}
	if a.lead.dialed() != 1 || b.lead.dialed() != 0 {
		t.Errorf("forwards: %d then %d, want 1 then 0", a.lead.dialed(), b.lead.dialed())
	}
}

func TestPrepareBulkNilSpec(t *testing.T) {
	_, err := prepareBulk([]*pb.JobSpec{validSpec("a"), nil}, testNow, jobspec.Limits{})
	st := wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"specs[1]"}) {
		t.Errorf("violations on %v, want specs[1]", fields)
	}
}
