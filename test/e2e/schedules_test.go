//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler"
)

// The schedule rules of a job (backfills, pause_after_failures, pauses
// with an end) on a real cluster, each with its leader SIGKILLed where a
// failover could break the rule.

// rulesTimeout bounds each wait of these scenarios.
const rulesTimeout = 45 * time.Second

// rulesCluster is a 3-node cluster of the plain binary and a client of one
// of its followers, the node the scenario never kills.
type rulesCluster struct {
	c      *localcluster.Cluster
	via    *localcluster.Node
	jobs   pb.JobServiceClient
	runs   pb.RunServiceClient
	leader *localcluster.Node
}

func startRulesCluster(t *testing.T) *rulesCluster {
	t.Helper()
	c := clustertest.Start(t, localcluster.Options{Binary: plainBinary.get(t), Dir: filepath.Join(t.TempDir(), "cluster"), Args: raftFlags})
	leader := clustertest.Leader(t, c)
	via := c.Followers(leader)[0]
	conn, err := c.Dial(via)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rulesCluster{c: c, via: via, leader: leader, jobs: pb.NewJobServiceClient(conn), runs: pb.NewRunServiceClient(conn)}
}

// call retries f until it succeeds, while the cluster has no leader or does
// not run version 3 yet (its first leader raises it).
func (r *rulesCluster) call(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	var last error
	ok := eventually(rulesTimeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		last = f(ctx)
		return last == nil
	})
	if !ok {
		t.Fatalf("%s: %v", what, last)
	}
}

// eventually polls cond until it holds or timeout passes, and reports
// whether it held.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

func (r *rulesCluster) job(t *testing.T, name string) *pb.Job {
	t.Helper()
	var j *pb.Job
	r.call(t, "get job "+name, func(ctx context.Context) error {
		resp, err := r.jobs.GetJob(ctx, &pb.GetJobRequest{Name: name})
		j = resp.GetJob()
		return err
	})
	return j
}

// waitJob waits until cond holds on the job, and returns it.
func (r *rulesCluster) waitJob(t *testing.T, name, what string, cond func(*pb.Job) bool) *pb.Job {
	t.Helper()
	var j *pb.Job
	if !eventually(rulesTimeout, func() bool { j = r.job(t, name); return cond(j) }) {
		t.Fatalf("job %s: not %s within %s; status %v", name, what, rulesTimeout, j.GetStatus())
	}
	return j
}

// ledgerRuns lists every run of the job the ledger holds.
func (r *rulesCluster) ledgerRuns(t *testing.T, job string, kind pb.FireKind) []*pb.Run {
	t.Helper()
	var out []*pb.Run
	page := ""
	for {
		var resp *pb.ListRunsResponse
		r.call(t, "list runs", func(ctx context.Context) error {
			var err error
			resp, err = r.runs.ListRuns(ctx, &pb.ListRunsRequest{Job: job, Limit: 1000, Kind: kind, PageToken: page})
			return err
		})
		out = append(out, resp.GetRuns()...)
		if page = resp.GetNextPageToken(); page == "" {
			return out
		}
	}
}

// killLeader SIGKILLs the current leader and waits for another.
func (r *rulesCluster) killLeader(t *testing.T) {
	t.Helper()
	old := clustertest.Leader(t, r.c)
	if old.ID == r.via.ID {
		t.Fatalf("the scenario's client node %s leads", old.ID)
	}
	if _, err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	next := clustertest.Leader(t, r.c)
	t.Logf("%s SIGKILLed; %s leads", old.ID, next.ID)
}

func newRulesSink(t *testing.T) (*Sink, string) {
	t.Helper()
	sink, err := NewSink(filepath.Join(t.TempDir(), "sink.db"), SinkFenced)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sink)
	t.Cleanup(func() { srv.Close(); _ = sink.Close() })
	return sink, srv.URL
}

// A backfill of 300 past slots, its leader SIGKILLed midway, delivers
// every slot exactly once to the fenced sink, each under a token above
// every one the sink saw before the backfill; the new leader goes on where
// the old one stopped, and the ledger holds one backfill run per slot.
func TestSchedulesBackfillKill3(t *testing.T) {
	const slots = 300
	r := startRulesCluster(t)
	sink, url := newRulesSink(t)
	// The job's own slots end two seconds after its creation; the backfill
	// is of the 300 seconds before it, none of which fired.
	now := time.Now().Truncate(time.Second)
	from, to := now.Add(-(slots+5)*time.Second), now.Add(-5*time.Second)
	spec := &pb.JobSpec{
		Name: "bf", Schedule: "* * * * * *", EndAt: timestamppb.New(now.Add(3 * time.Second)),
		Http:         &pb.HttpTarget{Url: url + "/bf", Timeout: durationpb.New(10 * time.Second)},
		Delivery:     pb.Delivery_DELIVERY_AT_LEAST_ONCE,
		HistoryLimit: 1000,
	}
	r.call(t, "create job", func(ctx context.Context) error {
		_, err := r.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
		return err
	})
	testutil.WaitFor(t, rulesTimeout, "the job's own slots to end", func() bool { return time.Now().After(now.Add(5 * time.Second)) })
	var before uint64
	for _, a := range sink.Attempts() {
		before = max(before, a.Token)
	}
	r.call(t, "start the backfill", func(ctx context.Context) error {
		_, err := r.jobs.BackfillJob(ctx, &pb.BackfillJobRequest{Name: "bf", From: timestamppb.New(from), To: timestamppb.New(to)})
		return err
	})
	applied := func(as []Attempt) int {
		n := 0
		for _, a := range as {
			if a.Outcome == Applied && a.Slot < to.Unix() {
				n++
			}
		}
		return n
	}
	waitSink(t, sink, "a third of the backfill applied", func(as []Attempt) bool { return applied(as) >= slots/3 })
	r.killLeader(t)
	j := r.waitJob(t, "bf", "done backfilling", func(j *pb.Job) bool {
		return j.GetStatus().GetBackfill().GetState() == pb.BackfillState_BACKFILL_STATE_DONE
	})
	if b := j.GetStatus().GetBackfill(); b.GetSlots() != slots || b.GetFired() != slots {
		t.Errorf("backfill %v: want %d slots, all fired", b, slots)
	}

	got := map[int64]int{}
	for _, a := range sink.Attempts() {
		if a.Slot >= to.Unix() {
			continue // the job's own slots
		}
		if a.Token <= before {
			t.Errorf("attempt %+v: token not above %d, the highest before the backfill", a, before)
		}
		if a.Outcome == Applied {
			got[a.Slot]++
		}
		if a.Outcome == Stale || a.Outcome == Bad {
			t.Errorf("attempt %+v refused by the sink", a)
		}
	}
	for s := from.Unix(); s < to.Unix(); s++ {
		if got[s] != 1 {
			t.Errorf("slot %s applied %d times, want once", time.Unix(s, 0).UTC().Format(time.RFC3339), got[s])
		}
	}
	runs := map[int64]int{}
	for _, run := range r.ledgerRuns(t, "bf", pb.FireKind_FIRE_KIND_BACKFILL) {
		runs[run.GetSlotUnix()]++
		if run.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
			t.Errorf("backfill run %s of slot %d: %s", run.GetId(), run.GetSlotUnix(), run.GetState())
		}
	}
	if len(runs) != slots {
		t.Errorf("the ledger holds backfill runs of %d slots, want %d", len(runs), slots)
	}
	for s, n := range runs {
		if n != 1 {
			t.Errorf("slot %d has %d backfill runs, want one", s, n)
		}
	}
}

// waitSink waits until cond holds on the sink's record.
func waitSink(t *testing.T, sink *Sink, what string, cond func([]Attempt) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rulesTimeout)
	defer cancel()
	if !sink.Wait(ctx, cond) {
		t.Fatalf("not within %s: %s", rulesTimeout, what)
	}
}

// A job whose every run fails, with pause_after_failures: 2, pauses itself
// after exactly two failed runs: the target sees two requests, the ledger
// two failed runs, and the pause names the second.
func TestSchedulesPauseAfterFailures3(t *testing.T) {
	r := startRulesCluster(t)
	var hits atomic.Int32
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	spec := &pb.JobSpec{
		Name: "flaky", Schedule: "@every 1s", PauseAfterFailures: 2,
		Http:    &pb.HttpTarget{Url: failing.URL, Timeout: durationpb.New(5 * time.Second)},
		Overlap: pb.Overlap_OVERLAP_BUFFER_ONE,
	}
	r.call(t, "create job", func(ctx context.Context) error {
		_, err := r.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
		return err
	})
	j := r.waitJob(t, "flaky", "paused", func(j *pb.Job) bool { return j.GetSpec().GetPaused() })
	// Slots keep coming due: a third run would have fired by now.
	settled := time.Now().Add(3 * time.Second)
	testutil.WaitFor(t, rulesTimeout, "three more slots", func() bool { return time.Now().After(settled) })

	var failed []*pb.Run
	for _, run := range r.ledgerRuns(t, "flaky", pb.FireKind_FIRE_KIND_UNSPECIFIED) {
		switch run.GetState() {
		case pb.RunState_RUN_STATE_FAILED:
			failed = append(failed, run)
		case pb.RunState_RUN_STATE_MISSED:
		default:
			t.Errorf("run %s: %s, want only the two failed runs and the slots missed while paused", run.GetId(), run.GetState())
		}
	}
	if len(failed) != 2 || hits.Load() != 2 {
		t.Fatalf("%d failed runs in the ledger and %d requests, want exactly 2", len(failed), hits.Load())
	}
	p := j.GetStatus().GetPause()
	last := failed[0]
	if failed[1].GetSlotUnix() > last.GetSlotUnix() {
		last = failed[1]
	}
	if p.GetReason() != fsm.PauseAfterFailures || p.GetRunId() != last.GetId() || j.GetStatus().GetFailuresInARow() != 2 {
		t.Errorf("pause %v, %d failures in a row: want reason %s naming run %s, 2 in a row", p, j.GetStatus().GetFailuresInARow(), fsm.PauseAfterFailures, last.GetId())
	}
	if j.GetUpdatedBy() != fsm.PrincipalSystem {
		t.Errorf("paused by %q, want %q", j.GetUpdatedBy(), fsm.PrincipalSystem)
	}
}

// A pause with an end resumes the job on time although the leader that
// took the pause was SIGKILLed during it: no slot inside the pause is
// delivered (catch-up none) but those still on time at its end (less than
// scheduler.OnTime before it), and the first slot at or after the end is
// delivered within seconds of it.
func TestSchedulesPauseUntilFailover3(t *testing.T) {
	r := startRulesCluster(t)
	sink, url := newRulesSink(t)
	spec := &pb.JobSpec{
		Name: "tick", Schedule: "* * * * * *",
		Http:         &pb.HttpTarget{Url: url + "/tick", Timeout: durationpb.New(10 * time.Second)},
		Catchup:      &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_NONE},
		HistoryLimit: 1000,
	}
	r.call(t, "create job", func(ctx context.Context) error {
		_, err := r.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
		return err
	})
	waitSink(t, sink, "the job firing", func(as []Attempt) bool { return len(as) >= 2 })
	// pausedAt is when the pause committed: slots before it fired.
	var pausedAt, until time.Time
	r.call(t, "pause until", func(ctx context.Context) error {
		until = time.Now().Truncate(time.Second).Add(8 * time.Second)
		resp, err := r.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "tick", Until: timestamppb.New(until)})
		pausedAt = resp.GetJob().GetUpdatedAt().AsTime()
		return err
	})
	testutil.WaitFor(t, rulesTimeout, "two seconds into the pause", func() bool { return time.Now().After(pausedAt.Add(2 * time.Second)) })
	r.killLeader(t)
	waitSink(t, sink, "a slot after the pause's end", func(as []Attempt) bool {
		return len(as) > 0 && as[len(as)-1].Slot >= until.Unix()
	})
	j := r.waitJob(t, "tick", "resumed", func(j *pb.Job) bool { return !j.GetSpec().GetPaused() })
	if j.GetUpdatedBy() != fsm.PrincipalSystem || j.GetStatus().GetPause() != nil {
		t.Errorf("resumed by %q with pause %v: want the cluster's own resume, no pause left", j.GetUpdatedBy(), j.GetStatus().GetPause())
	}
	const late = 4 * time.Second // an election, a commit and a request on a loaded machine
	var first *Attempt
	for _, a := range sink.Attempts() {
		switch {
		case a.Slot > pausedAt.Unix() && a.Slot < until.Add(-scheduler.OnTime).Unix():
			t.Errorf("slot %d inside the pause delivered: %+v", a.Slot, a)
		case a.Slot >= until.Unix() && first == nil:
			first = &a
		}
	}
	if first == nil || first.Slot != until.Unix() || first.Received.After(until.Add(late)) {
		t.Errorf("first delivery after the pause: %+v, want slot %d received within %s of it", first, until.Unix(), late)
	}
}
