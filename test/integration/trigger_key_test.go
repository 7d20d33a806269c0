package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/ledger"
	"github.com/raftcron/raftcron/scheduler/schedtest"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A scheduled slot and two manual runs triggered in that same second all
// take the second as their slot. Each is a run of its own, so each must
// reach the downstream under an idempotency key of its own and be applied
// once: by fence's de-duplication (the sink) and by the demo ledger
// (examples/ledger). The node runs on a fake clock held inside the slot's
// second, so the collision is certain, not a matter of timing.
func TestManualRunsInOneSecondAreEachAppliedOnce(t *testing.T) {
	created := time.Date(2030, 1, 1, 0, 30, 0, 0, time.UTC)
	slot := created.Truncate(time.Hour).Add(time.Hour)
	clk := schedtest.NewClock(created)
	tc := newCluster(t, 1, func(n *node) { n.clock, n.now = clk, clk.Now })
	leader := tc.waitLeader(1, 15*time.Second)

	fenced := newSink(t)
	lg, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.ScopeJob)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close() })
	demo := httptest.NewServer(ledger.NewServer(lg, nil))
	t.Cleanup(demo.Close)

	conn, err := grpc.NewClient(leader.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	jobs := pb.NewJobServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	targets := map[string]string{"to-fence": fenced.url("/run"), "to-ledger": demo.URL + "/run"}
	for name, url := range targets {
		spec := &pb.JobSpec{Name: name, Schedule: "0 * * * *", Http: &pb.HttpTarget{Url: url}}
		if _, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}

	// The hour's slot fires; the clock then stays inside its second.
	clk.Set(slot.Add(200 * time.Millisecond))
	for name := range targets {
		waitSucceeded(t, leader, name, 1)
	}
	for i := 2; i <= 3; i++ {
		for name := range targets {
			res, err := jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: name})
			if err != nil {
				t.Fatalf("trigger %d of %s: %v, %v", i, name, res, err)
			}
			waitSucceeded(t, leader, name, i)
		}
	}

	for name := range targets {
		runs := leader.fsm().ListRuns(name, 0)
		if len(runs) != 3 {
			t.Fatalf("%s has %d runs, want 3: %s", name, len(runs), describeRuns(runs))
		}
		for _, r := range runs {
			if r.GetSlotUnix() != slot.Unix() {
				t.Fatalf("%s: run %s has slot %d, want the shared second %d", name, r.GetId(), r.GetSlotUnix(), slot.Unix())
			}
		}
	}
	ran := map[string]bool{}
	for _, d := range fenced.deliveries() {
		if d.Outcome != applied {
			t.Errorf("fence: run %s (token %d) was %s, want applied", d.RunID, d.Token, d.Outcome)
			continue
		}
		ran[d.RunID] = true
	}
	if len(ran) != 3 {
		t.Errorf("fence applied %d runs of to-fence, want 3", len(ran))
	}
	entries, err := lg.Entries("to-ledger", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("demo ledger applied %d runs of to-ledger, want 3; its decisions: %s", len(entries), get(t, demo.URL+"/decisions"))
	}
}

// get returns the body at url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitSucceeded waits until job has n runs, all SUCCEEDED.
func waitSucceeded(t *testing.T, n *node, job string, want int) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("%d succeeded runs of %s", want, job), func() bool {
		runs := n.fsm().ListRuns(job, 0)
		for _, r := range runs {
			if r.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
				return false
			}
		}
		return len(runs) == want
	})
}
