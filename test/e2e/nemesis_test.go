//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Every nemesis below is bounded in time, heals what it did before it
// returns, and waits until the cluster has a leader again.

// alignToSlot sleeps until offset after the next multiple of period
// seconds (offset may be negative: before it). Slots are whole seconds,
// so this places a fault right before or after the leader commits a
// FireBatch; period 2 picks the slots of the slow job too.
func alignToSlot(period int64, offset time.Duration) {
	p := time.Duration(period) * time.Second
	now := time.Now()
	next := now.Truncate(p).Add(p + offset)
	for !next.After(now) {
		next = next.Add(p)
	}
	time.Sleep(time.Until(next))
}

// pickNodes returns k distinct nodes chosen by the scenario's seed.
func (s *scenario) pickNodes(k int, from []*node) []*node {
	idx := s.rng.Perm(len(from))
	out := make([]*node, 0, k)
	for _, i := range idx[:k] {
		out = append(out, from[i])
	}
	return out
}

// killNodes SIGKILLs nodes, keeps them down for down, restarts them on
// their data and waits until they are ready.
func (s *scenario) killNodes(kind string, nodes []*node, down time.Duration) {
	s.t.Helper()
	for _, n := range nodes {
		s.c.kill(n)
	}
	s.c.event(kind, nodes, fmt.Sprintf("SIGKILL, down %s", down))
	time.Sleep(down)
	for _, n := range nodes {
		s.c.restart(n)
	}
	s.c.event("restart", nodes, "on existing data")
	s.c.waitReady(nodes...)
	s.c.leader()
}

func (s *scenario) killLeader(down time.Duration) {
	s.killNodes("kill-leader", []*node{s.c.leader()}, down)
}

func (s *scenario) killRandom(down time.Duration) {
	s.killNodes("kill-random", s.pickNodes(1, s.c.nodes), down)
}

// killMajority kills a majority, the leader among them: no quorum until
// they return.
func (s *scenario) killMajority(down time.Duration) {
	leader := s.c.leader()
	var others []*node
	for _, n := range s.c.nodes {
		if n != leader {
			others = append(others, n)
		}
	}
	victims := append([]*node{leader}, s.pickNodes(len(s.c.nodes)/2, others)...)
	s.killNodes("kill-majority", victims, down)
}

// killAll kills every node at once and restarts the cluster on its data:
// the fencing counter must carry on from where it was (G3).
func (s *scenario) killAll(down time.Duration) {
	s.t.Helper()
	s.c.crash()
	s.c.event(EvKillAll, s.c.nodes, fmt.Sprintf("SIGKILL, down %s", down))
	time.Sleep(down)
	for _, n := range s.c.nodes {
		s.c.restart(n)
	}
	s.c.event(EvRestartAll, s.c.nodes, "on existing data")
	s.c.waitReady(s.c.nodes...)
	s.c.leader()
}

// pauseLeader SIGSTOPs the leader for d (well past the election timeout)
// and resumes it; it comes back deposed.
func (s *scenario) pauseLeader(d time.Duration) {
	s.t.Helper()
	leader := s.c.leader()
	s.c.pause(leader)
	s.c.event("pause-leader", []*node{leader}, fmt.Sprintf("SIGSTOP for %s", d))
	time.Sleep(d)
	s.c.resume(leader)
	s.c.event("resume", []*node{leader}, "SIGCONT")
	s.c.waitReady(s.c.nodes...)
	s.c.leader()
}

// pauseAfterCommit pauses the leader between the commit of an attempt and
// its dispatch (the pause-after-commit failpoint holds the attempt), keeps
// it stopped until a new leader has re-dispatched or moved past that
// attempt, then lets the held attempt go out: it reaches the sink stale,
// and the sink must refuse it. Without the failpoint wired it reports so
// and pauses the leader right after a slot instead.
func (s *scenario) pauseAfterCommit() {
	s.t.Helper()
	leader := s.c.leader()
	hold := filepath.Join(s.dir, "hold-"+leader.ID)
	arm, held := filepath.Join(hold, "arm"), filepath.Join(hold, "held")
	if err := os.WriteFile(arm, nil, 0o644); err != nil {
		s.t.Fatal(err)
	}
	var token uint64
	deadline := time.Now().Add(10 * time.Second)
	for token == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(held); err == nil {
			token, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if token == 0 {
		_ = os.Remove(arm)
		s.t.Logf("the pause-after-commit failpoint held no attempt within 10s on %s: is it wired? "+
			"Pausing the leader right after a slot instead.", leader.ID)
		alignToSlot(2, 50*time.Millisecond)
		s.pauseLeader(3 * time.Second)
		return
	}
	s.c.pause(leader)
	s.c.event("pause-after-commit", []*node{leader}, fmt.Sprintf("holding token %d, SIGSTOP", token))
	next := s.c.waitNewLeader(leader)
	s.c.event("new-leader", []*node{next}, "")
	// Wait until every stable job has admitted a newer token: the held
	// attempt is stale from then on, whichever job it belongs to.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	newer := s.sink.Wait(ctx, func(atts []Attempt) bool {
		seen := map[string]bool{}
		for _, a := range atts {
			if a.Token > token && (a.Outcome == Applied || a.Outcome == Duplicate) {
				seen[a.Job] = true
			}
		}
		return len(seen) == len(s.jobs)
	})
	cancel()
	if !newer {
		s.t.Logf("not every job admitted a token above %d within 20s", token)
	}
	// Release while still stopped: the attempt leaves the moment the node
	// runs again, before it can learn it was deposed.
	if err := os.Remove(held); err != nil {
		s.t.Errorf("release the held attempt: %v", err)
	}
	s.c.resume(leader)
	s.c.event("resume", []*node{leader}, fmt.Sprintf("SIGCONT; token %d released", token))
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	arrived := s.sink.Wait(ctx, func(atts []Attempt) bool {
		for _, a := range atts {
			if a.Token == token && a.Sender != next.ID {
				return true
			}
		}
		return false
	})
	cancel()
	if !arrived {
		s.t.Logf("the held attempt (token %d) never reached the sink", token)
	}
	s.c.waitReady(s.c.nodes...)
	s.c.leader()
}

// partition applies cuts, holds them for d, heals, and waits for a leader.
func (s *scenario) partition(kind, detail string, nodes []*node, d time.Duration, cut func() error) {
	s.t.Helper()
	if err := cut(); err != nil {
		s.t.Fatalf("%s: %v", kind, err)
	}
	s.c.event(kind, nodes, detail)
	time.Sleep(d)
	if err := s.c.net.HealAll(); err != nil {
		s.t.Fatalf("heal: %v", err)
	}
	s.c.event("heal", nil, "")
	s.c.waitReady(s.c.nodes...)
	s.c.leader()
}

// isolateLeader cuts the leader off from every other node just before a
// slot, so that it has a FireBatch in flight when it loses its quorum.
func (s *scenario) isolateLeader(d time.Duration) {
	leader := s.c.leader()
	alignToSlot(1, -100*time.Millisecond)
	s.partition("isolate-leader", fmt.Sprintf("for %s", d), []*node{leader}, d, func() error {
		for _, n := range s.c.nodes {
			if n != leader {
				if err := s.c.net.Cut(leader.Index, n.Index); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// splitHalves cuts the cluster into a minority and a majority chosen by
// the seed.
func (s *scenario) splitHalves(d time.Duration) {
	minority := s.pickNodes(len(s.c.nodes)/2, s.c.nodes)
	in := map[*node]bool{}
	for _, n := range minority {
		in[n] = true
	}
	s.partition("split-halves", fmt.Sprintf("minority %v for %s", ids(minority), d), minority, d, func() error {
		for _, a := range minority {
			for _, b := range s.c.nodes {
				if !in[b] {
					if err := s.c.net.Cut(a.Index, b.Index); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// bridge splits the others into two sides that cannot talk to each other
// while one node (the leader, to make it interesting) talks to both:
// a-b-c with a and c cut off from each other.
func (s *scenario) bridge(d time.Duration) {
	b := s.c.leader()
	var rest []*node
	for _, n := range s.c.nodes {
		if n != b {
			rest = append(rest, n)
		}
	}
	rest = s.pickNodes(len(rest), rest)
	left, right := rest[:len(rest)/2], rest[len(rest)/2:]
	s.partition("bridge", fmt.Sprintf("%v <-> %s <-> %v, the sides cut off from each other, for %s", ids(left), b.ID, ids(right), d),
		[]*node{b}, d, func() error {
			for _, l := range left {
				for _, r := range right {
					if err := s.c.net.Cut(l.Index, r.Index); err != nil {
						return err
					}
				}
			}
			return nil
		})
}

// oneWayFromLeader stops the leader from reaching the others while they
// still reach it.
func (s *scenario) oneWayFromLeader(d time.Duration) {
	leader := s.c.leader()
	s.partition("one-way", fmt.Sprintf("%s cannot reach the others, they reach it, for %s", leader.ID, d), []*node{leader}, d, func() error {
		for _, n := range s.c.nodes {
			if n != leader {
				if err := s.c.net.CutOneWay(leader.Index, n.Index); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// removeFollower removes a follower from the cluster, then adds it back
// with an empty data dir through --join.
func (s *scenario) removeAndReaddFollower() {
	s.t.Helper()
	leader := s.c.leader()
	var victim *node
	for _, n := range s.pickNodes(len(s.c.nodes), s.c.nodes) {
		if n != leader {
			victim = n
			break
		}
	}
	s.removeAndReadd(victim, "remove-follower")
}

// removeLeader removes the leader itself, then adds it back empty.
func (s *scenario) removeLeader() {
	s.removeAndReadd(s.c.leader(), "remove-leader")
}

func (s *scenario) removeAndReadd(victim *node, kind string) {
	s.t.Helper()
	via := func() *node {
		for _, n := range s.c.running() {
			if n != victim {
				return n
			}
		}
		return nil
	}
	s.retry("remove "+victim.ID, func(ctx context.Context, _ *node) error {
		_, err := s.c.admin(via()).RemoveNode(ctx, &pb.RemoveNodeRequest{Id: victim.ID})
		return err
	})
	s.c.event(kind, []*node{victim}, "removed from the configuration")
	s.c.kill(victim)
	if err := os.RemoveAll(victim.DataDir); err != nil {
		s.t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	var joinVia []string
	for _, n := range s.c.nodes {
		if n != victim {
			joinVia = append(joinVia, s.c.net.Addr(n.Index))
		}
	}
	s.c.rejoin(victim, joinVia...)
	s.c.event("rejoin", []*node{victim}, "empty data dir, --join")
	s.c.waitReady(victim)
	s.c.leader()
}

// transferTo hands leadership to n.
func (s *scenario) transferTo(n *node) {
	s.t.Helper()
	s.retry("transfer to "+n.ID, func(ctx context.Context, leader *node) error {
		if leader == n {
			return nil
		}
		_, err := s.c.admin(leader).TransferLeadership(ctx, &pb.TransferLeadershipRequest{Id: n.ID})
		return err
	})
	testutil.WaitFor(s.t, leaderTimeout, n.ID+" leading", func() bool { return s.c.polls.leader() == n })
	s.c.event("transfer", []*node{n}, "leadership transferred")
}

func ids(nodes []*node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}
