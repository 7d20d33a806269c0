package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/jobspec"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const jobName = "tick"

// scenario runs faults one after another against one every-second job
// on a three-node cluster, and notes per phase the slots it covers and
// what happened meanwhile.
type scenario struct {
	t      *testing.T
	begin  time.Time
	tc     *testCluster
	sink   *sink
	first  int64 // the first slot owed
	phases []phaseStats
}

type phaseStats struct {
	name          string
	from, to      int64 // slots
	leaderChanges int
	stale         int
	// From the ledger, filled in by finish.
	caughtUp, redispatched int
}

// startScenario starts the cluster and the sink, creates the job and
// waits until it fires.
func startScenario(t *testing.T) *scenario {
	t.Helper()
	sc := &scenario{t: t, begin: time.Now(), sink: newSink(t)}
	sc.tc = newCluster(t, 3)
	leader := sc.tc.waitLeader(3, 15*time.Second)
	// The job's cursor starts at its creation second: the next slot is
	// the first one owed.
	sc.first = createJob(t, leader, sc.sink.url("/"+jobName)) + 1
	sc.waitFiring(time.Now())
	sc.mark("warm-up", sc.begin)
	return sc
}

// finish checks the history from the first slot owed to the last phase's
// end, then the ledgers, and reports each phase.
func (sc *scenario) finish() []phaseStats {
	t := sc.t
	t.Helper()
	last := sc.phases[len(sc.phases)-1].to
	for _, v := range checkHistory(sc.sink.deliveries(), jobName, sc.first, last) {
		t.Error(v)
	}
	runs := sc.checkLedgers(last)
	for i := range sc.phases {
		p := &sc.phases[i]
		for _, r := range runs {
			if r.GetSlotUnix() < p.from || r.GetSlotUnix() > p.to {
				continue
			}
			if r.GetKind() == pb.FireKind_FIRE_KIND_CATCHUP {
				p.caughtUp++
			}
			if len(r.GetAttempts()) > 1 {
				p.redispatched++
			}
		}
		t.Logf("%-20s slots %d..%d: %2d checked (%d caught up, %d re-dispatched), %d leader changes, %d stale attempts refused",
			p.name, p.from, p.to, p.to-p.from+1, p.caughtUp, p.redispatched, p.leaderChanges, p.stale)
	}
	t.Logf("%d slots checked in %s", last-sc.first+1, time.Since(sc.begin).Round(time.Millisecond))
	return sc.phases
}

// downSlots is how many slots a faulty node misses before it comes back;
// upSlots how many a recovered cluster fires before the next fault.
const (
	downSlots = 2
	upSlots   = 2
)

// phase applies fault, then waits until the cluster has recovered: three
// nodes agree on a leader and the job fires on time again, for upSlots.
func (sc *scenario) phase(name string, fault func()) {
	sc.t.Helper()
	start := time.Now()
	fault()
	sc.tc.waitLeader(3, 20*time.Second)
	sc.waitFiring(time.Now())
	sc.waitSlots(upSlots)
	sc.mark(name, start)
}

// waitSlots waits until n more slots have been applied.
func (sc *scenario) waitSlots(n int64) {
	sc.t.Helper()
	from, _ := sc.sink.lastApplied(jobName)
	testutil.WaitFor(sc.t, time.Duration(n+10)*time.Second, fmt.Sprintf("%d slots after %d applied", n, from), func() bool {
		slot, _ := sc.sink.lastApplied(jobName)
		return slot >= from+n
	})
}

// mark closes a phase at the newest slot applied.
func (sc *scenario) mark(name string, start time.Time) {
	from := sc.first
	if n := len(sc.phases); n > 0 {
		from = sc.phases[n-1].to + 1
	}
	to, _ := sc.sink.lastApplied(jobName)
	end := time.Now()
	refusedStale := 0
	for _, d := range sc.sink.deliveries() {
		if d.Outcome == stale && !d.Received.Before(start) && d.Received.Before(end) {
			refusedStale++
		}
	}
	sc.phases = append(sc.phases, phaseStats{name: name, from: from, to: to,
		leaderChanges: sc.tc.gains.between(start, end), stale: refusedStale})
}

// waitFiring waits until a slot at least a second after t has been
// applied: the job fires on time, so every earlier slot has been caught up
// (or is missing, which the checker reports).
func (sc *scenario) waitFiring(t time.Time) {
	sc.t.Helper()
	want := t.Unix() + 1
	testutil.WaitFor(sc.t, 20*time.Second, fmt.Sprintf("slot %d applied at the sink", want), func() bool {
		slot, _ := sc.sink.lastApplied(jobName)
		return slot >= want
	})
}

// checkLedgers stops every scheduler, waits for the three FSMs to apply the
// same log and compares them, then holds the ledger against the sink: each
// slot up to last is one SUCCEEDED run, and every delivery is an attempt
// the ledger committed, under the run and slot it claimed (G2). It returns
// the job's runs.
func (sc *scenario) checkLedgers(last int64) []*pb.Run {
	t := sc.t
	t.Helper()
	// The outcomes up to last must be committed before the schedulers
	// stop, or their runs would stay open.
	leader := sc.tc.waitLeader(3, 10*time.Second)
	testutil.WaitFor(t, 10*time.Second, fmt.Sprintf("every run up to slot %d to finish", last), func() bool {
		for _, r := range leader.fsm().OpenRuns() {
			if r.GetJob() == jobName && r.GetSlotUnix() <= last {
				return false
			}
		}
		return true
	})
	for _, n := range sc.tc.nodes {
		n.sched().Stop()
	}
	testutil.WaitFor(t, 15*time.Second, "the three ledgers to apply the same log and agree", func() bool {
		ref := sc.tc.nodes[0]
		want, hash := ref.raft().Status().GetLastLogIndex(), ref.fsm().StateHash()
		for _, n := range sc.tc.nodes {
			st := n.raft().Status()
			if st.GetLastLogIndex() != want || st.GetAppliedIndex() != want || n.fsm().StateHash() != hash {
				return false
			}
		}
		return true
	})

	runs := sc.tc.nodes[0].fsm().ListRuns(jobName, 0)
	byID := make(map[string]*pb.Run, len(runs))
	bySlot := make(map[int64][]*pb.Run)
	for _, r := range runs {
		byID[r.GetId()] = r
		end := max(r.GetLastSlotUnix(), r.GetSlotUnix())
		for s := r.GetSlotUnix(); s <= end; s++ {
			bySlot[s] = append(bySlot[s], r)
		}
	}
	for slot := sc.first; slot <= last; slot++ {
		rs := bySlot[slot]
		if len(rs) != 1 || rs[0].GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
			t.Errorf("ledger: slot %d has %s; want one SUCCEEDED run", slot, describeRuns(rs))
			for s := slot - 3; s <= slot+1; s++ {
				t.Logf("  ledger near it: slot %d: %s", s, describeRuns(bySlot[s]))
			}
		}
	}
	for _, d := range sc.sink.deliveries() {
		r := byID[d.RunID]
		if r == nil || r.GetSlotUnix() != d.Slot || !hasAttempt(r, d.Token, d.Attempt) {
			t.Errorf("G2: delivery %+v is no committed attempt (ledger run: %s)", d, describeRuns([]*pb.Run{r}))
		}
	}
	return runs
}

func hasAttempt(r *pb.Run, token uint64, number uint32) bool {
	for _, a := range r.GetAttempts() {
		if a.GetToken() == token && a.GetNumber() == number {
			return true
		}
	}
	return false
}

func describeRuns(rs []*pb.Run) string {
	if len(rs) == 0 || rs[0] == nil {
		return "no run"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %s %s %s", r.GetId(), r.GetKind(), r.GetState(), r.GetReason())
		for _, a := range r.GetAttempts() {
			parts[i] += fmt.Sprintf(" [attempt %d token %d %s by %s term %d at %s, %s]",
				a.GetNumber(), a.GetToken(), a.GetKind(), a.GetNodeId(), a.GetTerm(),
				time.Unix(0, a.GetDispatchedAtUnixNano()).UTC().Format("15:04:05.000"), a.GetState())
		}
		if r.GetKind() == pb.FireKind_FIRE_KIND_UNSPECIFIED || r.GetState() == pb.RunState_RUN_STATE_MISSED {
			parts[i] += fmt.Sprintf(" (created %s)", time.Unix(0, r.GetCreatedAtUnixNano()).UTC().Format("15:04:05.000"))
		}
	}
	return strings.Join(parts, "; ")
}

// createJob registers the every-second job through n's public API, as a
// client would, and returns the job's cursor: the FSM takes the command's
// time as the creation time, and the first slot owed is the next one.
func createJob(t *testing.T, n *node, url string) int64 {
	t.Helper()
	spec := &pb.JobSpec{
		Name:     jobName,
		Schedule: "* * * * * *",
		Http:     &pb.HttpTarget{Url: url, Timeout: durationpb.New(5 * time.Second)},
		Catchup:  &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Overlap:  pb.Overlap_OVERLAP_SKIP,
		Delivery: pb.Delivery_DELIVERY_AT_LEAST_ONCE,
		// Keep every finished run, so the ledger can be held against the sink.
		HistoryLimit: jobspec.MaxHistoryLimit,
	}
	conn, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		resp, err := pb.NewJobServiceClient(conn).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
		if _, notLeader := cluster.NotLeaderInfo(err); notLeader && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond) // an election is under way
			continue
		}
		if err != nil {
			t.Fatalf("create job: %v", err)
		}
		cursor := resp.GetJob().GetStatus().GetCursorUnix()
		if cursor == 0 {
			t.Fatalf("created job has no cursor: %v", resp.GetJob())
		}
		return cursor
	}
}
