package api

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// defaultWatchBuffer is how many changes a watcher may lag behind before it
// is dropped.
const defaultWatchBuffer = 1024

// DefaultMaxWatchers bounds the WatchRuns streams of one node: each holds a
// buffer of defaultWatchBuffer runs and costs every applied run a send.
const DefaultMaxWatchers = 1000

// WatchBehindMessage ends a watch that fell behind (ResourceExhausted).
const WatchBehindMessage = "watch fell behind; re-list and watch again"

var (
	errBehind  = status.Error(codes.ResourceExhausted, WatchBehindMessage)
	errClosing = status.Error(codes.Unavailable, "the node is shutting down; watch another node")
)

// RunHub fans the run changes of this node's FSM out to WatchRuns streams.
// It is the RunsChanged half of an fsm.Observer: Apply calls it
// synchronously, so it never blocks. A watcher whose buffer is full is
// dropped (its stream ends with an error telling it to re-list) instead of
// holding up the log.
type RunHub struct {
	buffer      int
	maxWatchers int

	mu sync.Mutex // guards the fields below; held only for non-blocking sends
	// subs are the live watchers; an ended one is removed at once.
	subs   map[*runWatch]struct{}
	closed bool
}

// runWatch is one subscriber.
type runWatch struct {
	job string // "" means every job
	ch  chan *pb.Run
	// end is closed, once, when the hub ends the watch; err, written before,
	// says why.
	end chan struct{}
	err error
}

// NewRunHub returns a hub with no watchers that serves at most
// DefaultMaxWatchers.
func NewRunHub() *RunHub { return NewRunHubWith(DefaultMaxWatchers) }

// NewRunHubWith returns a hub with no watchers that serves at most
// maxWatchers (DefaultMaxWatchers if 0 or less); one more is refused with
// ResourceExhausted.
func NewRunHubWith(maxWatchers int) *RunHub {
	if maxWatchers <= 0 {
		maxWatchers = DefaultMaxWatchers
	}
	return &RunHub{buffer: defaultWatchBuffer, maxWatchers: maxWatchers, subs: map[*runWatch]struct{}{}}
}

var _ fsm.Observer = (*RunHub)(nil)

// RunsChanged delivers runs to every watcher whose filter matches, whatever
// they came from. The runs are shared between watchers: nobody may change
// them.
func (h *RunHub) RunsChanged(_ fsm.Origin, runs []*pb.Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		for _, r := range runs {
			if w.job != "" && r.GetJob() != w.job {
				continue
			}
			select {
			case w.ch <- r:
				continue
			default:
			}
			h.endLocked(w, errBehind)
			break
		}
	}
}

// JobsChanged does nothing: the hub only streams runs. It makes RunHub an
// fsm.Observer by itself.
func (h *RunHub) JobsChanged(fsm.Origin, []string) {}

// Close ends every watch, and every later one at once, so that a graceful
// stop does not wait for watchers that would never hang up.
func (h *RunHub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.subs {
		h.endLocked(w, errClosing)
	}
}

// Watchers is the number of live watchers.
func (h *RunHub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// subscribe registers a watcher of job ("" for all); cancel removes it. It
// fails with ResourceExhausted when the hub serves its limit of watchers.
func (h *RunHub) subscribe(job string) (w *runWatch, cancel func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed && len(h.subs) >= h.maxWatchers {
		return nil, nil, status.Errorf(codes.ResourceExhausted,
			"this node serves %d run watchers, its limit of %d watchers: stop a watch or watch another node", len(h.subs), h.maxWatchers)
	}
	w = &runWatch{job: job, ch: make(chan *pb.Run, h.buffer), end: make(chan struct{})}
	if h.closed {
		w.err = errClosing
		close(w.end)
		return w, func() {}, nil
	}
	h.subs[w] = struct{}{}
	return w, func() {
		h.mu.Lock()
		delete(h.subs, w)
		h.mu.Unlock()
	}, nil
}

func (h *RunHub) endLocked(w *runWatch, err error) {
	if _, live := h.subs[w]; live {
		delete(h.subs, w)
		w.err = err
		close(w.end)
	}
}
