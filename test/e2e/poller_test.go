//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/ops"
)

// pollEvery is how often the poller reads every node's /status.
const pollEvery = 100 * time.Millisecond

// fresh bounds the age of a status the harness acts on.
const fresh = time.Second

// poller reads every node's /status every 100 ms and keeps all it read.
type poller struct {
	c      *cluster
	client *http.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards points and last.
	mu     sync.Mutex
	points []StatusPoint
	last   map[string]StatusPoint // node -> latest successful poll
}

func newPoller(c *cluster) *poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &poller{
		c: c, cancel: cancel, last: map[string]StatusPoint{},
		client: &http.Client{
			Timeout:   300 * time.Millisecond,
			Transport: &http.Transport{DialContext: c.net.Dial, MaxIdleConnsPerHost: 2},
		},
	}
	for _, n := range c.nodes {
		p.wg.Add(1)
		go p.run(ctx, n)
	}
	return p
}

func (p *poller) stop() {
	p.cancel()
	p.wg.Wait()
}

func (p *poller) run(ctx context.Context, n *node) {
	defer p.wg.Done()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		p.poll(ctx, n)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *poller) poll(ctx context.Context, n *node) {
	pt := StatusPoint{At: time.Now(), Node: n.ID}
	if n.State() == localcluster.Down {
		pt.Err = "down"
	} else if st, err := p.status(ctx, n); err != nil {
		pt.Err = err.Error()
	} else {
		pt.State, pt.Leader, pt.Term, pt.Commit, pt.Applied, pt.Token = st.State, st.Leader.ID, st.Term, st.CommitIndex, st.AppliedIndex, st.FencingToken
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.points = append(p.points, pt)
	if pt.Err == "" {
		p.last[n.ID] = pt
	} else {
		delete(p.last, n.ID)
	}
}

func (p *poller) get(ctx context.Context, n *node, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.HTTPAddr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

func (p *poller) status(ctx context.Context, n *node) (ops.Status, error) {
	var st ops.Status
	code, body, err := p.get(ctx, n, "/status")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("/status: HTTP %d", code)
	}
	return st, json.Unmarshal(body, &st)
}

// latest is n's newest successful poll, if fresh.
func (p *poller) latest(n *node) (StatusPoint, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt, ok := p.last[n.ID]
	return pt, ok && time.Since(pt.At) < fresh
}

// leader is the running node that reports itself leader in the newest
// term any running node reports, or nil.
func (p *poller) leader() *node {
	var best *node
	var bestTerm, maxTerm uint64
	for _, n := range p.c.running() {
		pt, ok := p.latest(n)
		if !ok {
			continue
		}
		maxTerm = max(maxTerm, pt.Term)
		if pt.State == "leader" && pt.Term >= bestTerm {
			best, bestTerm = n, pt.Term
		}
	}
	if best == nil || bestTerm < maxTerm {
		return nil
	}
	return best
}

// all returns every poll so far.
func (p *poller) all() []StatusPoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]StatusPoint(nil), p.points...)
}
