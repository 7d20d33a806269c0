//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The chain of TestChains3: chain-a fires every 2 s, chain-b runs after
// each success of chain-a, chain-c after each success of chain-b; all
// three are webhooks into the fenced sink.
var (
	chainHead  = JobInfo{Name: "chain-a", Period: 2}
	chainLinks = []ChainLink{{Parent: "chain-a", Child: "chain-b"}, {Parent: "chain-b", Child: "chain-c"}}
)

// chainSpec is a child of the chain: no schedule, overlap allow (a set
// that completes while the previous run is still open, after a failover,
// fires all the same), every run kept.
func chainSpec(link ChainLink, sinkURL string) *pb.JobSpec {
	return &pb.JobSpec{
		Name:         link.Child,
		After:        []*pb.Dependency{{Job: link.Parent, On: pb.DependencyOn_DEPENDENCY_ON_SUCCESS}},
		AfterMissing: pb.AfterMissing_AFTER_MISSING_WAIT,
		Http:         &pb.HttpTarget{Url: sinkURL + "/" + link.Child, Timeout: durationpb.New(10 * time.Second)},
		Overlap:      pb.Overlap_OVERLAP_ALLOW,
		HistoryLimit: 1000,
	}
}

// createChains registers the children first (they wait for their
// parents), then the head: every run of a parent has its child already.
// The head joins the stable jobs, whose every slot is checked.
func (s *scenario) createChains() {
	s.t.Helper()
	for i := len(chainLinks) - 1; i >= 0; i-- {
		spec := chainSpec(chainLinks[i], s.sinkURL)
		s.retry("create "+spec.GetName(), func(ctx context.Context, n *node) error {
			_, err := s.c.jobs(n).ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
			return err
		})
	}
	s.chains = chainLinks
	s.addStableJob(chainHead)
}

// chainJobs are the children of the chains.
func (s *scenario) chainJobs() []string {
	var out []string
	for _, l := range s.chains {
		out = append(out, l.Child)
	}
	return out
}

// drainChains waits, once the head is paused, until no child has a run
// open, in chain order: a child's run fires with its parent's outcome, so
// once a parent has none open, the child's runs are all there.
func (s *scenario) drainChains() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range s.chainJobs() {
		for {
			st, err := s.jobStatus(name)
			if err == nil && len(st.GetOpenRunIds()) == 0 {
				break
			}
			if time.Now().After(deadline) {
				s.t.Logf("%s still has open runs (%v, %v); the checker will say which", name, st.GetOpenRunIds(), err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	s.c.event("chains-drained", nil, "")
}

// killLeaderAfterParent SIGKILLs the leader after the sink received a new
// attempt of the chain's head: its outcome, and the child it fires, are
// then on their way.
func (s *scenario) killLeaderAfterParent(after, down time.Duration) {
	s.t.Helper()
	seen := 0
	for _, a := range s.sink.Attempts() {
		if a.Job == chainHead.Name {
			seen++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !s.sink.Wait(ctx, func(atts []Attempt) bool {
		n := 0
		for _, a := range atts {
			if a.Job == chainHead.Name {
				n++
			}
		}
		return n > seen
	}) {
		s.t.Logf("no new attempt of %s in 10 s; killing the leader anyway", chainHead.Name)
	}
	time.Sleep(after)
	s.killNodes("kill-leader", []*node{s.c.leader()}, down)
	s.c.event("after-parent", nil, fmt.Sprintf("killed %s after %s's attempt", after, chainHead.Name))
}

// TestChains3: chain-a → chain-b → chain-c while the leader is SIGKILLed
// twice, each time just after a run of chain-a reached the sink, and
// SIGSTOPped once. For every success of a parent the checker wants
// exactly one child, committed with the parent's outcome under a larger
// token, and each dispatch naming its parent as the ledger does.
func TestChains3(t *testing.T) {
	s := newScenario(t, "chains3", scenarioOptions{nodes: 3, chains: true,
		expect: Expect{LeaderChanges: 3, ChainedRuns: 40}})
	s.run(5 * time.Second)
	s.killLeaderAfterParent(time.Duration(s.rng.IntN(300))*time.Millisecond, 3*time.Second)
	s.run(9 * time.Second)
	s.pauseLeader(3 * time.Second)
	s.run(9 * time.Second)
	s.killLeaderAfterParent(time.Duration(s.rng.IntN(300))*time.Millisecond, 3*time.Second)
	s.run(25 * time.Second)
	s.finish("")
}
