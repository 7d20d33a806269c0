package cluster

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// A disk that stops answering is worse than one that fails. A failed fsync
// makes Raft step down (the write returns an error); a stalled one blocks
// Raft's leader loop inside the write while the heartbeat goroutines go on,
// so the followers never elect anyone else and nothing commits until the
// disk comes back. So every write Raft makes to its log and stable store is
// timed, and a write older than the stall timeout is a failure:
//
//   - the node reports not ready while any write is stalled;
//   - a leader with a stalled write (or a node that leads while one is
//     stalled) closes DiskStalled for good: the process exits non-zero, a
//     supervisor restarts it, and another node leads within an election
//     timeout (CockroachDB does the same with its maximum sync duration).
//
// A follower does not exit: its stalled disk delays nobody (the leader
// commits with the others), it catches up by itself once the disk answers,
// and a quorum of followers on one slow storage system exiting together
// would turn a slowdown into an outage.

// DefaultDiskStallTimeout is how long a Raft disk write may take before
// the node counts its disk as stalled.
const DefaultDiskStallTimeout = 5 * time.Second

// minDiskStallTimeout keeps ordinary fsync latency from counting as a stall.
const minDiskStallTimeout = 100 * time.Millisecond

// checkDiskStallTimeout: zero takes the default; anything else must be at
// least minDiskStallTimeout.
func checkDiskStallTimeout(d time.Duration) error {
	switch {
	case d < 0:
		return invalidFieldf(FieldDiskStallTimeout, "%s must not be negative", d)
	case d > 0 && d < minDiskStallTimeout:
		return invalidFieldf(FieldDiskStallTimeout, "%s must be at least %s", d, minDiskStallTimeout)
	}
	return nil
}

// diskWatch times the Raft writes in flight and watches for a stall.
type diskWatch struct {
	timeout time.Duration
	log     *slog.Logger
	// beforeWrite runs inside every timed write (tests only: it can hold
	// the write to fake a stalled disk).
	beforeWrite func()

	mu      sync.Mutex // guards next, started and reported
	next    uint64
	started map[uint64]time.Time // writes in flight, by ticket
	// reported: the current stall has been logged.
	reported bool
	// busy wakes the watch, asleep while nothing was in flight, when a
	// write starts; sleeps counts those sleeps (tests).
	busy   chan struct{}
	sleeps atomic.Uint64

	failOnce sync.Once
	failed   chan struct{}
	failErr  error
	running  atomic.Bool // start was called
	stop     chan struct{}
	done     chan struct{}
}

func newDiskWatch(timeout time.Duration, log *slog.Logger, beforeWrite func()) *diskWatch {
	return &diskWatch{
		timeout:     timeout,
		log:         log,
		beforeWrite: beforeWrite,
		started:     make(map[uint64]time.Time),
		busy:        make(chan struct{}, 1),
		failed:      make(chan struct{}),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// begin records a write starting now; the returned func records its end.
func (w *diskWatch) begin() func() {
	w.mu.Lock()
	w.next++
	ticket := w.next
	if len(w.started) == 0 {
		select {
		case w.busy <- struct{}{}:
		default:
		}
	}
	w.started[ticket] = time.Now()
	w.mu.Unlock()
	if w.beforeWrite != nil {
		w.beforeWrite()
	}
	return func() {
		w.mu.Lock()
		delete(w.started, ticket)
		w.mu.Unlock()
	}
}

// oldest is how long the oldest write in flight has been running, or 0.
func (w *diskWatch) oldest(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var age time.Duration
	for _, at := range w.started {
		age = max(age, now.Sub(at))
	}
	return age
}

// stalled reports whether a write has been running for the timeout or
// longer.
func (w *diskWatch) stalled() bool { return w.oldest(time.Now()) >= w.timeout }

// start checks the writes in flight, ten times per timeout, until close;
// leading reports whether the node leads now.
func (w *diskWatch) start(leading func() bool) {
	w.running.Store(true)
	go w.run(leading)
}

// run sleeps from a check that finds nothing in flight until the next
// write starts: an idle node writes nothing, and on an idle machine each
// wake-up of a process costs 0.1–0.2 ms of CPU.
func (w *diskWatch) run(leading func() bool) {
	defer close(w.done)
	every := min(max(w.timeout/10, 10*time.Millisecond), 500*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-t.C:
			w.check(now, leading)
		}
		if w.idle() {
			w.sleeps.Add(1)
			select {
			case <-w.stop:
				return
			case <-w.busy:
			}
		}
		t.Reset(every)
	}
}

// idle: no write in flight and no stall left to report as over.
func (w *diskWatch) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.started) == 0 && !w.reported
}

func (w *diskWatch) check(now time.Time, leading func() bool) {
	age := w.oldest(now)
	w.mu.Lock()
	was := w.reported
	w.reported = age >= w.timeout
	w.mu.Unlock()
	switch {
	case age >= w.timeout && !was:
		w.log.Error("raft disk write stalled: reporting not ready", "running_for", age, "disk_stall_timeout", w.timeout)
	case age < w.timeout && was:
		w.log.Warn("raft disk write returned after a stall: ready again")
	}
	if age >= w.timeout && leading() {
		w.fail(fmt.Errorf("%w: a Raft write has not returned for %s (--disk-stall-timeout %s) while this node leads",
			ErrDiskStalled, age.Round(time.Millisecond), w.timeout))
	}
}

func (w *diskWatch) fail(err error) {
	w.failOnce.Do(func() {
		w.failErr = err
		close(w.failed)
		w.log.Error("giving up leadership: this node stops so that another one can lead", "err", err)
	})
}

// close stops the watcher, if it was started.
func (w *diskWatch) close() {
	close(w.stop)
	if w.running.Load() {
		<-w.done
	}
}

// DiskStalled is closed when this node, leading, found a Raft write
// stalled for longer than its disk stall timeout; DiskStallErr says how
// long. The node cannot step down while the write blocks Raft, so the
// process must exit (non-zero, for a supervisor to restart it) without
// waiting on Raft.
func (n *Node) DiskStalled() <-chan struct{} { return n.disk.failed }

// DiskStallErr wraps ErrDiskStalled once DiskStalled is closed; nil before.
func (n *Node) DiskStallErr() error {
	select {
	case <-n.disk.failed:
		return n.disk.failErr
	default:
		return nil
	}
}

// Collectors are the node's own Prometheus metrics, for the ops port's
// registry: the age of its oldest Raft disk write in flight, which an
// alert can watch well before it reaches the stall timeout.
func (n *Node) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftcron_disk_write_age_seconds",
			Help: "How long the oldest Raft disk write in flight has been running (0: none). " +
				"At --disk-stall-timeout the node reports not ready, and exits if it leads.",
		}, func() float64 { return n.disk.oldest(time.Now()).Seconds() }),
	}
}

// watchedLogStore times the writes of Raft's log store.
type watchedLogStore struct {
	raft.LogStore
	w *diskWatch
}

func (s watchedLogStore) StoreLog(l *raft.Log) error {
	defer s.w.begin()()
	return s.LogStore.StoreLog(l)
}

func (s watchedLogStore) StoreLogs(logs []*raft.Log) error {
	defer s.w.begin()()
	return s.LogStore.StoreLogs(logs)
}

func (s watchedLogStore) DeleteRange(lo, hi uint64) error {
	defer s.w.begin()()
	return s.LogStore.DeleteRange(lo, hi)
}

// watchedStableStore times the writes of Raft's stable store (term and
// vote, written before Raft may act on them).
type watchedStableStore struct {
	raft.StableStore
	w *diskWatch
}

func (s watchedStableStore) Set(key, val []byte) error {
	defer s.w.begin()()
	return s.StableStore.Set(key, val)
}

func (s watchedStableStore) SetUint64(key []byte, val uint64) error {
	defer s.w.begin()()
	return s.StableStore.SetUint64(key, val)
}
