package api

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// clockStore commits into a real FSM as a one-node cluster's leader does,
// each command stamped with the node's clock; before, when set, runs first
// (another entry that commits in between).
type clockStore struct {
	*fsmStore
	mu     sync.Mutex
	now    time.Time
	before func(*pb.Command)
}

func (s *clockStore) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	s.mu.Lock()
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before(cmd)
	}
	cmd.ProposedAtUnixNano = s.clock().UnixNano()
	return s.fsmStore.Apply(ctx, cmd)
}

func (s *clockStore) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *clockStore) set(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// checkinNode is a leader's JobService over a real FSM and a clock.
type checkinNode struct {
	*harness
	store *clockStore
}

// newCheckinNode serves a job "nightly" pinged every 10 s with a grace of
// 3 s, created at testNow: its slots are testNow + 10 s, + 20 s, ...
func newCheckinNode(t *testing.T) *checkinNode {
	t.Helper()
	return newCheckinNodeOf(t, &pb.JobSpec{Name: "nightly", Schedule: "@every 10s", Checkin: &pb.CheckinTarget{},
		Expect: &pb.Expect{StartWithin: durationpb.New(3 * time.Second)}})
}

// newCheckinNodeOf is a node holding the check-in job spec.
func newCheckinNodeOf(t *testing.T, spec *pb.JobSpec) *checkinNode {
	t.Helper()
	store := &clockStore{fsmStore: &fsmStore{f: fsm.New()}, now: testNow}
	if _, err := store.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	n := &checkinNode{store: store}
	n.harness = newHarnessConfig(t, func(d *Deps) {
		d.Store, d.Registry, d.Now = store, store.f, store.clock
		d.Limits.MaxOpenRuns = 5
	})
	if _, err := n.jobs.CreateJob(testCtx(t), &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *checkinNode) ping(t *testing.T, at time.Duration, req *pb.CheckinJobRequest) *pb.Run {
	t.Helper()
	n.store.set(testNow.Add(at))
	req.Name = "nightly"
	resp, err := n.jobs.CheckinJob(testCtx(t), req)
	if err != nil {
		t.Fatalf("check-in at +%s: %v", at, err)
	}
	return resp.GetRun()
}

func slotAt(d time.Duration) int64 { return testNow.Add(d).Unix() }

// TestCheckinJobMatchesTheSlotAtItsClock: the node matches each ping to a
// slot at its own clock; the FSM keeps the match and records the slots it
// leaves behind.
func TestCheckinJobMatchesTheSlotAtItsClock(t *testing.T) {
	n := newCheckinNode(t)
	early := n.ping(t, 8*time.Second, &pb.CheckinJobRequest{Status: "start"})
	if early.GetSlotUnix() != slotAt(10*time.Second) || early.GetOffSchedule() || early.GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		t.Fatalf("a start 2 s early: %v, want slot +10s open", early)
	}
	done := n.ping(t, 12*time.Second, &pb.CheckinJobRequest{Status: "success", RunId: early.GetId()})
	if done.GetId() != early.GetId() || done.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("success: %v", done)
	}
	// Slot +20s gets nothing; a success at +31s takes slot +30s and leaves
	// +20s missed.
	late := n.ping(t, 31*time.Second, &pb.CheckinJobRequest{})
	if late.GetSlotUnix() != slotAt(30*time.Second) || late.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("a success at +31s: %v, want slot +30s succeeded", late)
	}
	j, err := n.store.f.Job("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if st := j.GetStatus(); st.GetMissed() != 1 || st.GetSucceeded() != 2 || st.GetCursorUnix() != slotAt(30*time.Second) {
		t.Fatalf("status %v, want slot +20s missed, 2 succeeded", st)
	}
	off := n.ping(t, 34*time.Second, &pb.CheckinJobRequest{Status: "fail", ExitCode: new(int32(2))})
	if !off.GetOffSchedule() || off.GetState() != pb.RunState_RUN_STATE_FAILED || off.GetAttempts()[0].GetExitCode() != 2 {
		t.Fatalf("a fail 4 s after a checked-in slot: %v, want an off-schedule failed run", off)
	}
}

// TestCheckinJobMatchesTheSlotsOfSeveralSchedules: a check-in job with
// schedules takes its slots from all of them.
func TestCheckinJobMatchesTheSlotsOfSeveralSchedules(t *testing.T) {
	n := newCheckinNodeOf(t, &pb.JobSpec{Name: "nightly", Schedules: []string{"@every 10s", "@every 15s"}, Checkin: &pb.CheckinTarget{},
		Expect: &pb.Expect{StartWithin: durationpb.New(2 * time.Second)}})
	for _, slot := range []time.Duration{10 * time.Second, 15 * time.Second} {
		if r := n.ping(t, slot, &pb.CheckinJobRequest{}); r.GetOffSchedule() || r.GetSlotUnix() != slotAt(slot) {
			t.Fatalf("a ping at slot +%s: %v, want it to take the slot", slot, r)
		}
	}
}

// TestBackfillRefusesACheckinJob: a check-in job fires none of its slots,
// so a backfill of it is refused, and nothing starts.
func TestBackfillRefusesACheckinJob(t *testing.T) {
	n := newCheckinNode(t)
	n.store.set(testNow.Add(time.Minute))
	_, err := n.jobs.BackfillJob(testCtx(t), &pb.BackfillJobRequest{Name: "nightly",
		From: timestamppb.New(testNow), To: timestamppb.New(testNow.Add(30 * time.Second))})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "check-in job") {
		t.Fatalf("a backfill of a check-in job: %v, want FailedPrecondition naming it a check-in job", err)
	}
	if j, _ := n.store.f.Job("nightly"); j.GetStatus().GetBackfill() != nil {
		t.Fatalf("a refused backfill started: %v", j.GetStatus().GetBackfill())
	}
}

// TestCheckinJobMatchesAgainWhenTheJobMovedOn: the scheduler's miss that
// commits between the match and the ping's entry makes the match stale;
// the node matches again and records the ping.
func TestCheckinJobMatchesAgainWhenTheJobMovedOn(t *testing.T) {
	n := newCheckinNode(t)
	j, err := n.store.f.Job("nightly")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	n.store.before = func(cmd *pb.Command) {
		if cmd.GetCheckin() == nil {
			return
		}
		once.Do(func() {
			miss := &pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{LeaderId: "n1", Term: 1,
				Misses: []*pb.Miss{{Job: "nightly", Generation: j.GetGeneration(), FromSlotUnix: slotAt(10 * time.Second),
					ToSlotUnix: slotAt(10 * time.Second), Count: 1, Reason: fsm.ReasonNoCheckin}}}}}
			miss.ProposedAtUnixNano = testNow.Add(14 * time.Second).UnixNano()
			if _, err := n.store.fsmStore.Apply(context.Background(), miss); err != nil {
				t.Error(err)
			}
		})
	}
	r := n.ping(t, 18*time.Second, &pb.CheckinJobRequest{Status: "start"})
	if r.GetSlotUnix() != slotAt(20*time.Second) {
		t.Fatalf("ping %v, want slot +20s after matching again", r)
	}
	if st, _ := n.store.f.JobStatus("nightly"); st.GetMissed() != 1 {
		t.Fatalf("status %v, want the scheduler's miss of slot +10s alone", st)
	}
}

func TestCheckinJobRefusesBadInput(t *testing.T) {
	n := newCheckinNode(t)
	ctx := testCtx(t)
	for _, tc := range []struct {
		req   *pb.CheckinJobRequest
		field string
	}{
		{&pb.CheckinJobRequest{Name: "Nightly"}, "name"},
		{&pb.CheckinJobRequest{Name: "nightly", Status: "done"}, "status"},
		{&pb.CheckinJobRequest{Name: "nightly", Status: "start", ExitCode: new(int32(0))}, "exit_code"},
		{&pb.CheckinJobRequest{Name: "nightly", Status: "success", ExitCode: new(int32(3))}, "exit_code"},
		{&pb.CheckinJobRequest{Name: "nightly", Status: "start", Output: "x"}, "output"},
		{&pb.CheckinJobRequest{Name: "nightly", Status: "start", RunId: "nightly-1"}, "run_id"},
		{&pb.CheckinJobRequest{Name: "nightly", RequestId: "a b"}, "request_id"},
	} {
		_, err := n.jobs.CheckinJob(ctx, tc.req)
		if fields := badRequestFields(t, wantCode(t, err, codes.InvalidArgument)); len(fields) != 1 || fields[0] != tc.field {
			t.Errorf("%v: fields %q, want %q", tc.req, fields, tc.field)
		}
	}
	if runs := n.store.f.ListRuns("nightly", 0); len(runs) != 0 {
		t.Fatalf("refused pings recorded %v", runs)
	}
	webhook := validSpec("webhook")
	if _, err := n.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: webhook}); err != nil {
		t.Fatal(err)
	}
	_, err := n.jobs.CheckinJob(ctx, &pb.CheckinJobRequest{Name: "webhook"})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "not a check-in job") {
		t.Fatalf("message %q", st.Message())
	}
	_, err = n.jobs.CheckinJob(ctx, &pb.CheckinJobRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound)
}

// TestCheckinJobKeepsTheOutputsTail: the last 4 KiB, from a whole rune.
func TestCheckinJobKeepsTheOutputsTail(t *testing.T) {
	n := newCheckinNode(t)
	out := "é" + strings.Repeat("x", MaxCheckinOutput-1) + "end"
	r := n.ping(t, 10*time.Second, &pb.CheckinJobRequest{Status: "fail", Output: out})
	got := string(r.GetAttempts()[0].GetOutput())
	if !strings.HasSuffix(got, "end") || len(got) > MaxCheckinOutput || strings.ContainsRune(got, 'é') || len(got) < MaxCheckinOutput-1 {
		t.Fatalf("kept %d bytes ending %q, want the last 4 KiB from a rune boundary", len(got), got[max(0, len(got)-5):])
	}
}

// TestCheckinJobIsIdempotentByRequestID: a retried ping, through the
// same node, counts once.
func TestCheckinJobIsIdempotentByRequestID(t *testing.T) {
	n := newCheckinNode(t)
	a := n.ping(t, 10*time.Second, &pb.CheckinJobRequest{RequestId: "cron-1"})
	b := n.ping(t, 11*time.Second, &pb.CheckinJobRequest{RequestId: "cron-1"})
	if a.GetId() != b.GetId() || len(n.store.f.ListRuns("nightly", 0)) != 1 {
		t.Fatalf("retried ping: %s then %s, want one run", a.GetId(), b.GetId())
	}
}

// TestCheckinJobOpenRunsLimit: a start beyond the node's limit of open runs
// is ResourceExhausted.
func TestCheckinJobOpenRunsLimit(t *testing.T) {
	n := newCheckinNode(t)
	for i := range 5 {
		n.ping(t, time.Duration(i)*time.Second, &pb.CheckinJobRequest{Status: "start"})
	}
	_, err := n.jobs.CheckinJob(testCtx(t), &pb.CheckinJobRequest{Name: "nightly", Status: "start"})
	wantCode(t, err, codes.ResourceExhausted)
}

// TestCheckinJobForwardedFromFollower: a follower hands the ping to the
// leader, whose clock matches it; with the request id it made.
func TestCheckinJobForwardedFromFollower(t *testing.T) {
	leader := newCheckinNode(t)
	leader.store.set(testNow.Add(10 * time.Second))
	follower := newTriggerNode(t, false)
	follower.lead.conn = leader.conn
	resp, err := follower.jobs.CheckinJob(testCtx(t), &pb.CheckinJobRequest{Name: "nightly", Status: "start"})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.GetRun(); r.GetSlotUnix() != slotAt(10*time.Second) || !hexID.MatchString(r.GetRequestId()) {
		t.Fatalf("run %v, want slot +10s with the follower's generated request id", r)
	}
	if cmds := follower.store.commands; len(cmds) != 0 {
		t.Fatalf("the follower proposed %v", cmds)
	}
}

// TestCheckinTargetAndRoleNeedClusterVersion3: a check-in job and a token
// of role checkin wait for every voter to run version 3.
func TestCheckinTargetAndRoleNeedClusterVersion3(t *testing.T) {
	state := fsm.New()
	store := &fsmStore{f: state}
	d := Deps{Store: store, Registry: state, Tokens: state, Now: func() time.Time { return testNow },
		ClusterVersion: func() uint32 { return 2 }}
	spec := &pb.JobSpec{Name: "nightly", Schedule: "@daily", Checkin: &pb.CheckinTarget{}}
	_, err := NewJobService(d).CreateJob(testCtx(t), &pb.CreateJobRequest{Spec: spec})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "a check-in needs cluster version 3") {
		t.Fatalf("message %q", st.Message())
	}
	_, err = NewACLService(d).CreateAclToken(testCtx(t), &pb.CreateAclTokenRequest{Name: "cron", Role: pb.AclRole_ACL_ROLE_CHECKIN})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "role checkin needs cluster version 3") {
		t.Fatalf("message %q", st.Message())
	}
	if len(store.entries) != 0 {
		t.Fatal("a refused write reached the log")
	}
}

// TestCheckinTargetAndRoleGoByTheCommittedClusterVersion: a node that has
// not applied the leader's raise to version 3 yet applies it by a read
// barrier rather than refuse a check-in job or a token of role checkin.
func TestCheckinTargetAndRoleGoByTheCommittedClusterVersion(t *testing.T) {
	behind := func() Deps {
		state := fsm.New()
		store := &fsmStore{f: state}
		store.onBarrier = func() { // the raise, committed, reaches this node
			if _, err := store.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
				t.Error(err)
			}
		}
		return Deps{Store: store, Registry: state, Tokens: state, Now: func() time.Time { return testNow },
			ClusterVersion: state.ClusterVersion}
	}
	spec := &pb.JobSpec{Name: "nightly", Schedule: "@daily", Checkin: &pb.CheckinTarget{}}
	if _, err := NewJobService(behind()).CreateJob(testCtx(t), &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatalf("a check-in job on a node behind the leader's cluster version: %v", err)
	}
	_, err := NewACLService(behind()).CreateAclToken(testCtx(t), &pb.CreateAclTokenRequest{Name: "cron", Role: pb.AclRole_ACL_ROLE_CHECKIN})
	if err != nil {
		t.Fatalf("a token of role checkin on a node behind the leader's cluster version: %v", err)
	}
}

// TestCheckinRoleChecksInItsScopeAndNothingElse: role checkin pings the
// check-in jobs of its selector (the others do not exist for it) and may
// call nothing else; write and management may ping too, read may not.
func TestCheckinRoleChecksInItsScopeAndNothingElse(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	cron := h.token(t, mgmt, "backup-host", pb.AclRole_ACL_ROLE_CHECKIN, map[string]string{"team": "ops"})
	write := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)
	for name, team := range map[string]string{"ops-backup": "ops", "billing-backup": "billing"} {
		spec := &pb.JobSpec{Name: name, Schedule: "@daily", Checkin: &pb.CheckinTarget{}, Labels: map[string]string{"team": team}}
		if _, err := h.jobs.CreateJob(with(ctx, mgmt), &pb.CreateJobRequest{Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	checkin := func(tok, job string) error {
		_, err := h.jobs.CheckinJob(with(ctx, tok), &pb.CheckinJobRequest{Name: job})
		return err
	}
	if err := checkin(cron, "ops-backup"); err != nil {
		t.Fatalf("checkin token, job in its scope: %v", err)
	}
	if st := wantCode(t, checkin(cron, "billing-backup"), codes.NotFound); st.Message() != `job "billing-backup" not found` {
		t.Fatalf("outside its scope: %q, want the answer for a missing job", st.Message())
	}
	for _, tok := range []string{write, mgmt} {
		if err := checkin(tok, "billing-backup"); err != nil {
			t.Fatalf("write or management checking in: %v", err)
		}
	}
	for _, tok := range []string{read, worker} {
		st := wantCode(t, checkin(tok, "ops-backup"), codes.PermissionDenied)
		if !strings.Contains(st.Message(), "role checkin or write") {
			t.Fatalf("message %q should name the role needed", st.Message())
		}
	}
	as := with(ctx, cron)
	for name, call := range map[string]func() error{
		"create a job": func() error {
			_, err := h.jobs.CreateJob(as, &pb.CreateJobRequest{Spec: labelled("mine", map[string]string{"team": "ops"})})
			return err
		},
		"read a job":  func() error { _, err := h.jobs.GetJob(as, &pb.GetJobRequest{Name: "ops-backup"}); return err },
		"list jobs":   func() error { _, err := h.jobs.ListJobs(as, &pb.ListJobsRequest{}); return err },
		"pause a job": func() error { _, err := h.jobs.PauseJob(as, &pb.PauseJobRequest{Name: "ops-backup"}); return err },
		"trigger":     func() error { _, err := h.jobs.TriggerJob(as, &pb.TriggerJobRequest{Name: "ops-backup"}); return err },
		"list runs":   func() error { _, err := h.runs.ListRuns(as, &pb.ListRunsRequest{}); return err },
		"cancel a run": func() error {
			_, err := h.runs.CancelRun(as, &pb.CancelRunRequest{Id: "ops-backup-1"})
			return err
		},
		"cluster status": func() error { _, err := h.admin.GetStatus(as, &pb.GetStatusRequest{}); return err },
	} {
		t.Run(name, func(t *testing.T) { wantCode(t, call(), codes.PermissionDenied) })
	}
	runs := h.store.f.ListRuns("", 0)
	if len(runs) != 3 || runs[0].GetAttempts()[0].GetPingedBy() == "" {
		t.Fatalf("runs %v, want the three pings, each naming who pinged", runs)
	}
}
