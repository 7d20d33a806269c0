package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// holdProposer stands between the scheduler and the fake Raft: a FireBatch
// that carries a fire of job is held (before it reaches the log) until
// release, and then committed, failed or refused as fault says.
type holdProposer struct {
	*fakeProposer
	job string

	mu    sync.Mutex
	gate  chan struct{}
	fault string // "", "error" (outcome unknown, not committed) or "refused"
	held  int    // entries waiting at the gate
}

func (p *holdProposer) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return p.Propose(ctx, cmd)()
}

func (p *holdProposer) Propose(ctx context.Context, cmd *pb.Command) func() (*pb.CommandResult, error) {
	fb := cmd.GetFireBatch()
	if fb == nil || !slices.ContainsFunc(fb.GetFires(), func(f *pb.Fire) bool { return f.GetJob() == p.job }) {
		return p.fakeProposer.Propose(ctx, cmd)
	}
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
	return func() (*pb.CommandResult, error) { return p.release(ctx, cmd) }
}

func (p *holdProposer) release(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	p.mu.Lock()
	gate, fault := p.gate, p.fault
	p.mu.Unlock()
	if gate != nil {
		<-gate
	}
	p.mu.Lock()
	p.held--
	p.mu.Unlock()
	switch fault {
	case "error":
		return nil, errInjected
	case "refused":
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_INVALID, Message: "refused"}, nil
	}
	return p.fakeProposer.Apply(ctx, cmd)
}

func (p *holdProposer) heldCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// twoEntryTick registers enough jobs for a tick of two entries; the last
// job's entry (the second) goes through hp.
func twoEntryTick(t *testing.T) (*harness, *holdProposer, []string) {
	hp := &holdProposer{}
	h := newHarness(t, func(c *Config) {
		hp.fakeProposer = c.Proposer.(*fakeProposer)
		c.Proposer = hp
		c.Workers = 16
	})
	names := make([]string, maxFiresPerEntry+10)
	for i := range names {
		names[i] = fmt.Sprintf("job-%05d", i)
		h.putJob(spec(names[i], "@every 10s"))
	}
	hp.job = names[len(names)-1]
	h.lead()
	return h, hp, names
}

// The first entry of a large tick is dispatched while the second has not
// committed yet, and nothing of the second is dispatched before it has.
func TestEntriesDispatchAsTheyCommit(t *testing.T) {
	h, hp, names := twoEntryTick(t)
	gate := make(chan struct{})
	hp.mu.Lock()
	hp.gate = gate
	hp.mu.Unlock()
	before := len(h.prop.fireBatches())
	h.clock.Advance(10 * time.Second)

	h.waitFor("the first entry's fires to be dispatched", func() bool {
		return len(h.exec.startedOf("")) >= firstEntryFires && hp.heldCount() == 1
	})
	second := names[firstEntryFires:]
	for _, a := range h.exec.startedOf("") {
		if slices.Contains(second, a.Job) {
			t.Fatalf("%s dispatched before its entry committed", a.Job)
		}
	}
	for _, n := range second {
		if runs := h.runs(n); len(runs) != 0 {
			t.Fatalf("%s has runs before its entry committed", n)
		}
	}
	close(gate)
	h.settle()
	for _, n := range names {
		if got := len(h.exec.startedOf(n)); got != 1 {
			t.Fatalf("%s dispatched %d times, want 1", n, got)
		}
	}
	if n := len(h.prop.fireBatches()) - before; n != 2 {
		t.Fatalf("%d fire batches for the tick, want 2", n)
	}
}

// An entry that fails to commit, or that the state machine refuses,
// dispatches nothing, while the tick's other entry is dispatched; the
// failed entry's jobs fire on the next tick.
func TestFailedEntryDispatchesNothing(t *testing.T) {
	for _, fault := range []string{"error", "refused"} {
		t.Run(fault, func(t *testing.T) {
			h, hp, names := twoEntryTick(t)
			hp.mu.Lock()
			hp.fault = fault
			hp.mu.Unlock()
			h.clock.Advance(10 * time.Second)
			first, second := names[:firstEntryFires], names[firstEntryFires:]
			h.waitFor("the first entry's fires to finish", func() bool {
				return len(h.exec.finishedOf("")) == len(first)
			})
			// The failed tick is over once the loop sleeps before retrying
			// (asleep on the clock, but not idle after a tick).
			h.waitFor("the loop to rest after the failure", func() bool {
				l := h.s.current()
				return h.s.InFlight() == 0 && l.unsettled.Load() == 0 && l.idleAt.Load() == 0 &&
					h.clock.Waiters() == 1
			})
			for _, a := range h.exec.startedOf("") {
				if !slices.Contains(first, a.Job) {
					t.Fatalf("%s dispatched from an entry that did not commit", a.Job)
				}
			}
			for _, n := range second {
				if runs := h.runs(n); len(runs) != 0 {
					t.Fatalf("%s has %d runs from an entry that did not commit", n, len(runs))
				}
			}

			hp.mu.Lock()
			hp.fault = ""
			hp.mu.Unlock()
			h.clock.Advance(fireRetry)
			h.settle()
			for _, n := range names {
				if got := len(h.exec.startedOf(n)); got != 1 {
					t.Fatalf("%s dispatched %d times, want 1", n, got)
				}
			}
		})
	}
}

// gatedState holds the planning of one job until a signal: it lets a test
// see what happens before the rest of a tick is planned.
type gatedState struct {
	State
	job  string
	wait atomic.Pointer[chan struct{}]
}

func (s *gatedState) StoredJob(name string) (fsm.StoredJob, error) {
	if c := s.wait.Load(); c != nil && name == s.job {
		<-*c
	}
	return s.State.StoredJob(name)
}

// A tick's first entry is proposed as soon as it is planned, before the
// jobs of its later entries are planned.
func TestEntryProposedBeforeTheTickIsPlanned(t *testing.T) {
	hp := &holdProposer{}
	gs := &gatedState{}
	h := newHarness(t, func(c *Config) {
		hp.fakeProposer = c.Proposer.(*fakeProposer)
		c.Proposer = hp
		gs.State = c.State
		c.State = gs
		c.Workers = 16
	})
	names := make([]string, maxFiresPerEntry+10)
	for i := range names {
		names[i] = fmt.Sprintf("job-%05d", i)
		h.putJob(spec(names[i], "@every 10s"))
	}
	h.lead()
	// The first entry carries job-00000; the planning of the last job
	// waits until that entry has reached Raft.
	hp.job, gs.job = names[0], names[len(names)-1]
	gate := make(chan struct{})
	hp.mu.Lock()
	hp.gate = gate
	hp.mu.Unlock()
	planned := make(chan struct{})
	gs.wait.Store(&planned)
	var once sync.Once
	release := func() { once.Do(func() { gs.wait.Store(nil); close(planned); close(gate) }) }
	t.Cleanup(release) // runs before the harness stops the scheduler
	h.clock.Advance(10 * time.Second)
	h.waitFor("the first entry to be proposed while the tick is still planning", func() bool {
		return hp.heldCount() == 1
	})
	release()
	h.settle()
	if n := len(h.exec.startedOf("")); n != len(names) {
		t.Fatalf("%d dispatched, want %d", n, len(names))
	}
}
