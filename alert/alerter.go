// Package alert is the leader's side of alerts: it checks the time-based
// expectations (late with nothing dispatched, too_long, no_success) and the
// reminders due, proposing check_alerts stamped with its clock for the
// state machine to judge, and it delivers the alerts the log committed to
// their channels (webhook, Slack, PagerDuty, email), recording every
// attempt through the log. Nothing is sent that is not committed first,
// and a new leader sends what the old one left unacknowledged: receivers
// see each alert at least once, under one id they dedupe on.
package alert

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/secret"
)

// ErrNotLeader: only the leader sends, test notifications included.
var ErrNotLeader = cluster.ErrNotLeader

// State is what the alerter reads of the replicated state (fsm.FSM).
type State interface {
	PendingAlerts() []*pb.Alert
	OpenEpisodes() []*pb.AlertEpisode
	TooLongDue(nowNano int64, limit int) []*pb.AlertCheck
	AlertsActive() bool
	AlertsOpen() int
	Channel(name string) (*pb.Channel, bool)
	NotifyRules(selector map[string]string) []*pb.NotifyRule
	StoredJobs(fn func(fsm.StoredJob) bool)
	StoredJob(name string) (fsm.StoredJob, error)
	SecretFor(spec *pb.JobSpec, name string) (*pb.Secret, error)
}

// Proposer commits the leader's own commands on this node, never
// forwarding them (scheduler.NewNodeProposer).
type Proposer interface {
	Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error)
	Barrier(ctx context.Context) error
	Term() uint64
	ID() string
}

// Config wires an Alerter.
type Config struct {
	State    State
	Proposer Proposer
	// Now is the clock that stamps the checks (the scheduler's); nil is
	// time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Egress is the webhooks' egress policy, which notifications follow.
	Egress dispatch.AddrPolicy
	// Keys sign webhook notifications (--fence-key-file); nil: unsigned.
	Keys Keys
	// SecretKeys open the secrets channels reference.
	SecretKeys *secret.Keyring
	// Site names the cluster and its UI in notifications.
	Site Site
	// HistoryLimit is how many alerts the cluster keeps
	// (--alert-history-limit); 0 leaves the state's.
	HistoryLimit uint32
	// Timeout bounds one delivery attempt; 0 means 10 s.
	Timeout time.Duration
	// Tick is the longest pause between evaluations; 0 means 1 s.
	Tick time.Duration
}

// Alerter runs on every node and works while its node leads.
type Alerter struct {
	cfg     Config
	log     *slog.Logger
	send    *sender
	metrics *metrics
	wake    chan struct{}

	mu      sync.Mutex
	cur     *term
	last    *term
	stopped bool
}

// New returns an Alerter; nothing runs until SetLeader(true).
func New(cfg Config) (*Alerter, error) {
	if cfg.State == nil || cfg.Proposer == nil {
		return nil, errors.New("alert: State and Proposer are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	a := &Alerter{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
	a.send = newSender(cfg.Egress, cfg.Keys, cfg.Site, cfg.Timeout)
	a.metrics = newMetrics(cfg.State)
	return a, nil
}

// SetLeader starts the term's loop (true) or ends it (false). It never
// blocks and never calls Raft.
func (a *Alerter) SetLeader(leading bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	if !leading {
		if a.cur != nil {
			a.cur.cancel()
			a.cur = nil
		}
		return
	}
	if a.cur != nil {
		return
	}
	t := newTerm(a)
	prev := a.last
	a.cur, a.last = t, t
	go t.run(prev)
}

// Stop ends the loop for good and waits for it.
func (a *Alerter) Stop() {
	a.mu.Lock()
	a.stopped = true
	t := a.last
	if a.cur != nil {
		a.cur.cancel()
		a.cur = nil
	}
	a.mu.Unlock()
	if t != nil {
		<-t.done
	}
}

func (a *Alerter) current() *term {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

func (a *Alerter) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// The fsm observer's methods: only what may change the alerter's plans
// wakes it. A fire or an outcome changes none of them (their alerts come
// through AlertsChanged), so the fire path costs one comparison here.

// JobsChanged re-plans the jobs a registry write changed.
func (a *Alerter) JobsChanged(o fsm.Origin, names []string) {
	if o.Kind == fsm.KindFireBatch || o.Kind == "complete_batch" || o.Kind == "check_alerts" {
		return
	}
	if t := a.current(); t != nil {
		t.markDirty(o.Kind == fsm.KindRestore, names)
		a.poke()
	}
}

// RunsChanged is no concern of the alerter's.
func (a *Alerter) RunsChanged(fsm.Origin, []*pb.Run) {}

// AlertsChanged wakes the sender: alerts were raised or delivered; a rule
// change re-plans every job.
func (a *Alerter) AlertsChanged(o fsm.Origin) {
	if t := a.current(); t != nil {
		if o.Kind == "put_notify_rule" || o.Kind == "delete_notify_rule" || o.Kind == "put_channel" {
			t.markDirty(true, nil)
		}
		a.poke()
	}
}
