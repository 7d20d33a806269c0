//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRecover3: the quorum is lost for good — every node killed, two of
// the three data dirs gone. `raftcron recover` rewrites the survivor's
// membership to itself alone; it leads with every job and the fencing
// counter it had, the two others join it again with empty data dirs, and
// the checker holds the whole history to G1-G4: every slot of the outage
// caught up once, and every attempt after the recovery above every token
// issued before it (the kill-all rule of G3).
func TestRecover3(t *testing.T) {
	s := newScenario(t, "recover3", scenarioOptions{nodes: 3, expect: Expect{LeaderChanges: 1}})
	s.run(4 * time.Second)
	s.loseMajorityAndRecover()
	s.run(4 * time.Second)
	s.finish("")
}

// loseMajorityAndRecover kills every node, deletes every data dir but the
// leader's (the leader holds every committed entry, so every token ever
// dispatched), recovers that one alone, restarts it, and has the others
// join it with empty data dirs. The harness ties node IDs to addresses, so
// they come back under their old IDs, as in the membership scenario: safe,
// because the recovered membership no longer names them.
func (s *scenario) loseMajorityAndRecover() {
	s.t.Helper()
	survivor := s.c.leader()
	s.c.crash()
	s.c.event(EvKillAll, s.c.nodes, "SIGKILL; every data dir but "+survivor.ID+"'s is lost")
	for _, n := range s.c.nodes {
		if n != survivor {
			if err := os.RemoveAll(n.DataDir); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	alone := survivor.ID + "=" + s.c.net.Addr(survivor.Index)
	out, err := exec.Command(s.c.bin, "recover", "--data-dir", survivor.DataDir, "--peers", alone).CombinedOutput()
	if err != nil {
		s.t.Fatalf("raftcron recover: %v\n%s", err, out)
	}
	s.c.event("recover", []*node{survivor}, strings.TrimSpace(string(out)))
	if !strings.Contains(string(out), "now "+alone+"\n") {
		s.t.Errorf("recover output %q does not name the new membership %s", out, alone)
	}
	s.c.restart(survivor)
	s.c.waitReady(survivor)
	for _, n := range s.c.nodes {
		if n != survivor {
			s.c.rejoin(n, s.c.net.Addr(survivor.Index))
		}
	}
	s.c.event(EvRestartAll, s.c.nodes, fmt.Sprintf("%s alone, the others joined it with empty data dirs", survivor.ID))
	s.c.waitReady(s.c.nodes...)
	s.c.leader()
}
