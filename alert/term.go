package alert

import (
	"context"
	"sync"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// barrierRetry is the pause between failed barriers while still leading.
const barrierRetry = 500 * time.Millisecond

// term is one leadership term's loop: its plans and deliveries live
// exactly as long.
type term struct {
	a      *Alerter
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	term   uint64

	// Owned by the loop goroutine.
	plans *plans
	// deliveries are what this term knows of the pending alerts it sends.
	deliveries map[string]*delivery
	counted    map[string]bool

	// mu guards dirty, rescan and results, written from other goroutines.
	mu      sync.Mutex
	dirty   map[string]bool
	rescan  bool
	results []*pb.DeliveryRecord
	sends   sync.WaitGroup
	slots   chan struct{}
}

// maxSends bounds the deliveries in flight at once.
const maxSends = 16

func newTerm(a *Alerter) *term {
	ctx, cancel := context.WithCancel(context.Background())
	return &term{
		a: a, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		plans:      newPlans(),
		deliveries: map[string]*delivery{},
		counted:    map[string]bool{},
		dirty:      map[string]bool{},
		rescan:     true,
		slots:      make(chan struct{}, maxSends),
	}
}

func (t *term) run(prev *term) {
	defer close(t.done)
	if prev != nil {
		<-prev.done
	}
	if !t.establish() {
		return
	}
	t.a.log.Info("alerts: leading", "term", t.term)
	tick := time.NewTicker(t.a.cfg.Tick)
	defer tick.Stop()
	for {
		t.step(t.a.cfg.Now())
		select {
		case <-t.ctx.Done():
			t.sends.Wait()
			return
		case <-t.a.wake:
		case <-tick.C:
		}
	}
}

// establish waits until the state reflects every earlier term.
func (t *term) establish() bool {
	for {
		term := t.a.cfg.Proposer.Term()
		ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
		err := t.a.cfg.Proposer.Barrier(ctx)
		cancel()
		if err == nil {
			t.term = term
			return true
		}
		select {
		case <-t.ctx.Done():
			return false
		case <-time.After(barrierRetry):
		}
	}
}

// step is one pass: check what is due, send what is pending, record what
// was sent.
func (t *term) step(now time.Time) {
	if !t.a.cfg.State.AlertsActive() {
		t.idle()
		if len(t.deliveries) == 0 {
			return
		}
	}
	if checks := t.evaluate(now); len(checks) > 0 {
		t.propose(&pb.Command{Kind: &pb.Command_CheckAlerts{CheckAlerts: &pb.CheckAlertsCommand{
			LeaderId: t.a.cfg.Proposer.ID(), Term: t.term, Checks: checks, HistoryLimit: t.a.cfg.HistoryLimit,
		}}})
	}
	t.deliver(now)
	t.record()
}

// propose commits a command of the leader's own, stamped with its clock
// (the time the state machine judges checks by); a failure is logged and
// the next pass tries again what is still due.
func (t *term) propose(cmd *pb.Command) bool {
	cmd.ProposedAtUnixNano = t.a.cfg.Now().UnixNano()
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	res, err := t.a.cfg.Proposer.Apply(ctx, cmd)
	if err == nil && res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.a.log.Warn("alerts: command refused", "code", res.GetCode().String(), "message", res.GetMessage())
		return false
	}
	if err != nil {
		if t.ctx.Err() == nil {
			t.a.log.Warn("alerts: proposal failed", "error", err)
		}
		return false
	}
	return true
}

func (t *term) markDirty(all bool, names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if all {
		t.rescan = true
		return
	}
	for _, n := range names {
		t.dirty[n] = true
	}
}

// idle forgets the jobs marked while no channel exists: nothing plans
// them then, and the set would keep every name written in the term (about
// 35 bytes a job, on a leader that alerts nobody). The first pass with a
// channel plans every job instead.
func (t *term) idle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.dirty) > 0 {
		t.dirty = map[string]bool{}
		t.rescan = true
	}
}

// takeDirty returns the jobs to plan again, or all of them.
func (t *term) takeDirty() (all bool, names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	all, t.rescan = t.rescan, false
	for n := range t.dirty {
		names = append(names, n)
	}
	clear(t.dirty)
	return all, names
}
