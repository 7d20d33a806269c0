package devcluster

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/raftcron/raftcron/localcluster"
)

// Leader polling of dev: how often, and how long one round may take.
const (
	devWatchInterval = 250 * time.Millisecond
	devAskTimeout    = 500 * time.Millisecond
)

// leaderWatch follows which node leads, by asking the nodes' /status, and
// announces each new leader with the command that kills it.
type leaderWatch struct {
	out *devOut

	// mu guards cluster, set once it runs, leader, the leader last
	// announced, and muted, set once dev stops (the stop hands leadership
	// around; nobody should kill it now). Announcements are printed under
	// mu, so they come out in order.
	mu      sync.Mutex
	cluster *localcluster.Cluster
	leader  *localcluster.Node
	muted   bool
}

// watch starts following c's nodes.
func (w *leaderWatch) watch(c *localcluster.Cluster) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cluster = c
}

func (w *leaderWatch) nodes() []*localcluster.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cluster == nil {
		return nil
	}
	return w.cluster.Nodes()
}

// mute ends the announcements.
func (w *leaderWatch) mute() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.muted = true
}

func (w *leaderWatch) current() *localcluster.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leader
}

// announce prints l once it has become the leader; nil changes nothing.
func (w *leaderWatch) announce(l *localcluster.Node) {
	if l == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if l == w.leader || w.muted {
		return
	}
	w.leader = l
	pid := l.Process().Pid()
	w.out.eventf("leader is now %s (pid %d); kill the leader: kill -9 %d", l.ID, pid, pid)
}

// run watches the leader until ctx ends.
func (w *leaderWatch) run(ctx context.Context) {
	ticker := time.NewTicker(devWatchInterval)
	defer ticker.Stop()
	for {
		w.announce(w.find(ctx))
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// find asks every live node at once and returns the one that says it leads
// (at the highest term, should two say so), or nil.
func (w *leaderWatch) find(ctx context.Context) *localcluster.Node {
	ctx, cancel := context.WithTimeout(ctx, devAskTimeout)
	defer cancel()
	type claim struct {
		node *localcluster.Node
		term uint64
	}
	nodes := w.nodes()
	claims := make(chan claim, len(nodes))
	for _, n := range nodes {
		go func() {
			if n.State() != localcluster.Running {
				claims <- claim{}
				return
			}
			st, err := n.Status(ctx)
			if err != nil || st.State != "leader" {
				claims <- claim{}
				return
			}
			claims <- claim{node: n, term: st.Term}
		}()
	}
	var best claim
	for range nodes {
		if c := <-claims; c.node != nil && (best.node == nil || c.term > best.term) {
			best = c
		}
	}
	return best.node
}

// leaderNow names the node leading now, which is the one that dispatched
// what arrives now (announcing it if it is new); the last one announced if
// none answers in time.
func (w *leaderWatch) leaderNow(ctx context.Context) string {
	w.announce(w.find(ctx))
	if l := w.current(); l != nil {
		return l.ID
	}
	return "-"
}

// devOut writes dev's lines whole, whichever goroutine prints them.
type devOut struct {
	mu sync.Mutex // serializes writes to w
	w  io.Writer
}

// printf prints one line.
func (o *devOut) printf(format string, a ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, format+"\n", a...)
}

// eventf prints one line that starts with the local time of day.
func (o *devOut) eventf(format string, a ...any) {
	o.printf("%s %s", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
}
