package scheduler

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// progressInterval is how often the leader commits remote workers'
	// progress: a heartbeat a second from every worker must not become an
	// entry each (docs/workers.md).
	progressInterval = time.Second
	// maxProgressPerEntry caps one record_progress entry.
	maxProgressPerEntry = 2000
	// maxProgressHeld bounds the attempts whose report waits; reports of
	// further attempts are dropped until the next commit.
	maxProgressHeld = 100_000
)

// Progress holds remote workers' latest progress reports, one per
// attempt, until the leader commits them: the worker hub reports into it
// (Report is its Config.Progress), and the leader's loop commits what
// changed at most once a progressInterval, as record_progress entries. A
// report is best effort: one that does not commit is dropped, and the
// worker's next one takes its place.
type Progress struct {
	mu     sync.Mutex
	latest map[uint64]*pb.ProgressRecord // by token
}

// NewProgress returns an empty Progress for Config.Progress.
func NewProgress() *Progress {
	return &Progress{latest: make(map[uint64]*pb.ProgressRecord)}
}

// Report keeps r as its attempt's latest report. It never blocks.
func (p *Progress) Report(r *pb.ProgressRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.latest[r.GetToken()]; !ok && len(p.latest) >= maxProgressHeld {
		return
	}
	p.latest[r.GetToken()] = r
}

// take removes every held report, in token order.
func (p *Progress) take() []*pb.ProgressRecord {
	p.mu.Lock()
	held := p.latest
	p.latest = make(map[uint64]*pb.ProgressRecord, len(held))
	p.mu.Unlock()
	out := make([]*pb.ProgressRecord, 0, len(held))
	for _, r := range held {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *pb.ProgressRecord) int { return compareTokens(a.GetToken(), b.GetToken()) })
	return out
}

func compareTokens(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// runProgress commits the held reports every progressInterval until the
// term ends. Reports held before the term are an earlier leader's
// attempts' (the FSM would skip them): they go.
func (l *leader) runProgress(p *Progress) {
	p.take()
	for l.pause(progressInterval) {
		recs := p.take()
		if len(recs) == 0 {
			continue
		}
		if v := l.s.state.ClusterVersion(); v < fsm.ProgressVersion {
			continue // not every voter applies record_progress yet: progress stays on the leader
		}
		for len(recs) > 0 {
			n := min(len(recs), maxProgressPerEntry)
			l.proposeProgress(recs[:n])
			recs = recs[n:]
		}
	}
}

// proposeProgress commits one record_progress entry; a failure drops it.
func (l *leader) proposeProgress(recs []*pb.ProgressRecord) {
	cmd := &pb.Command{
		ProposedAtUnixNano: l.s.clock.Now().UnixNano(),
		Kind:               &pb.Command_RecordProgress{RecordProgress: &pb.RecordProgressCommand{Records: recs}},
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
	defer cancel()
	if _, err := l.s.prop.Apply(ctx, cmd); err != nil && l.ctx.Err() == nil {
		l.s.log.Debug("progress of remote workers not committed; the next reports take its place",
			"error", err, "records", len(recs))
	}
}
