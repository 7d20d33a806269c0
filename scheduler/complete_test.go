package scheduler

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/syncbuf"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCompleterHoldsOnlyWhileDeliveriesWait(t *testing.T) {
	c := newCompleter()
	if c.hold(true) {
		t.Fatal("an empty queue is held")
	}
	c.add("a", &pb.Completion{Token: 1})
	if !c.hold(true) {
		t.Fatal("an outcome is not held while deliveries wait")
	}
	if c.hold(false) {
		t.Fatal("an outcome is held with no delivery waiting")
	}
	for i := range maxCompletionsPerEntry {
		c.add("a", &pb.Completion{Token: uint64(i + 2)})
	}
	if !c.hold(true) {
		t.Fatal("outcomes are not held once they fill an entry; a wave's would commit between its fires")
	}
	c.mu.Lock()
	c.since = time.Now().Add(-maxCompletionHold)
	c.mu.Unlock()
	if c.hold(true) {
		t.Fatalf("an outcome is held longer than %v", maxCompletionHold)
	}
}

// While deliveries wait for a pool worker, the outcomes of the attempts
// that finished wait too, and then go out together: their commits would
// take CPU from the deliveries.
func TestOutcomesWaitForQueuedDeliveries(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers, c.Queue = 2, 16 })
	var mu sync.Mutex
	var entries [][]*pb.Completion
	var firstAt time.Time
	h.prop.after = func(cmd *pb.Command, _ *pb.CommandResult) {
		if cb := cmd.GetCompleteBatch(); cb != nil {
			mu.Lock()
			defer mu.Unlock()
			if len(entries) == 0 {
				firstAt = time.Now()
			}
			entries = append(entries, cb.GetCompletions())
		}
	}
	// Token order: a (held at its gate on one worker), q1..q4 (quick once
	// let go, on the other), q5 (held at its gate there), z (queued behind
	// them). Every attempt is queued before any finishes.
	for _, name := range []string{"a", "q1", "q2", "q3", "q4", "q5", "z"} {
		h.putJob(spec(name, "@every 10s"))
		if name != "z" {
			h.exec.gate(name)
		}
	}
	h.lead()
	h.clock.Advance(10 * time.Second)
	h.waitFor("a and q1 on the workers, the rest queued", func() bool {
		return h.exec.blockedCount("a") == 1 && h.exec.blockedCount("q1") == 1 && h.s.handoff.backlog() == 5
	})
	start := time.Now()
	for _, name := range []string{"q1", "q2", "q3", "q4"} {
		h.exec.open(name)
	}
	h.waitFor("q1..q4 to finish", func() bool { return len(h.exec.finishedOf("q4")) == 1 })
	h.waitFor("their outcomes to commit", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(entries) > 0
	})
	mu.Lock()
	first, at := entries[0], firstAt
	mu.Unlock()
	if len(first) != 4 {
		t.Fatalf("the first outcome entry holds %d outcomes, want q1..q4's 4 together", len(first))
	}
	if held := at.Sub(start); held < maxCompletionHold {
		t.Fatalf("outcomes committed %v after they began while z was queued; want them held %v", held, maxCompletionHold)
	}
	h.release("q5")
	h.release("a")
}

// The followers learn of a commit only with the leader's next entry or
// Raft's commit timer, and apply what it covers then. Outcomes committed
// while deliveries wait are not announced: the next fires would carry the
// news anyway, and the followers would apply during those deliveries. Once
// none wait, the commit of the last outcomes is announced at once, so that
// the followers apply them now and not during the next wave.
func TestOutcomesAreAnnouncedOnceNoDeliveryWaits(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers, c.Queue = 2, 16 })
	var mu sync.Mutex
	var outcomesAt []uint64 // the index of each CompleteBatch
	h.prop.after = func(cmd *pb.Command, _ *pb.CommandResult) {
		if cmd.GetCompleteBatch() != nil {
			mu.Lock()
			defer mu.Unlock()
			outcomesAt = append(outcomesAt, h.prop.committed())
		}
	}
	outcomes := func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(outcomesAt)
	}
	// Token order: a and b (each held at its gate on a worker), c (quick,
	// queued), d (held at its gate, queued), e (queued).
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		h.putJob(spec(name, "@every 10s"))
		if name != "c" && name != "e" {
			h.exec.gate(name)
		}
	}
	h.lead()
	h.clock.Advance(10 * time.Second)
	h.waitFor("a and b on the workers, the rest queued", func() bool {
		return h.exec.blockedCount("a") == 1 && h.exec.blockedCount("b") == 1 && h.s.handoff.backlog() == 3
	})
	h.exec.open("b") // b, then c finish; d takes the worker and e waits
	h.waitFor("b's and c's outcomes, held until the hold ran out while e waited", func() bool {
		return len(outcomes()) > 0
	})
	held := outcomes()
	h.release("d")
	h.release("a")
	all := outcomes()
	last := all[len(all)-1]
	h.waitFor("the last outcomes' commit announced", func() bool {
		got := h.prop.announcements()
		return len(got) > 0 && got[len(got)-1] >= last
	})
	for _, idx := range h.prop.announcements() {
		if idx <= held[len(held)-1] {
			t.Fatalf("outcomes committed at %v while e waited were announced (at %d); all outcome entries %v", held, idx, all)
		}
	}
}

// At info level the log carries the attempts that did not succeed; the
// counters and the run ledger record every one.
func TestOnlyUnsuccessfulAttemptsAreLoggedAtInfo(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	h.putJob(spec("ok", "@every 10s"))
	h.putJob(spec("bad", "@every 10s"))
	h.exec.setOutcome("bad", pb.RunState_RUN_STATE_FAILED)
	h.lead()
	h.step(10 * time.Second)
	out := buf.String()
	if !strings.Contains(out, `msg="run attempt finished" job=bad`) {
		t.Fatalf("the failed attempt is not logged at info:\n%s", out)
	}
	if strings.Contains(out, "job=ok") {
		t.Fatalf("a successful attempt is logged at info:\n%s", out)
	}
}

// While a tick's later entries are still being committed, the outcomes of
// its first fires wait (up to the hold), and then go out together:
// committing them would put them in the FSM's way ahead of those fires.
func TestOutcomesWaitWhileTheTickIsCommitted(t *testing.T) {
	h := newHarness(t)
	const jobs = firstEntryFires + 50
	for i := range jobs {
		h.putJob(spec(fmt.Sprintf("job-%03d", i), "@every 10s"))
	}
	var mu sync.Mutex
	var outcomeEntries []int
	var firstAt time.Time
	second := make(chan struct{})
	h.prop.after = func(cmd *pb.Command, _ *pb.CommandResult) {
		if fb := cmd.GetFireBatch(); fb != nil && len(fb.GetFires()) < firstEntryFires {
			<-second // the tick's second entry commits; its proposer hears late
		}
		if cb := cmd.GetCompleteBatch(); cb != nil {
			mu.Lock()
			if len(outcomeEntries) == 0 {
				firstAt = time.Now()
			}
			outcomeEntries = append(outcomeEntries, len(cb.GetCompletions()))
			mu.Unlock()
		}
	}
	h.lead()
	start := time.Now()
	h.clock.Advance(10 * time.Second)
	h.waitFor("an outcome entry", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomeEntries) > 0
	})
	close(second)
	h.settle()
	mu.Lock()
	defer mu.Unlock()
	if held := firstAt.Sub(start); held < maxCompletionHold {
		t.Fatalf("the first outcomes were committed %v into the tick; want them held %v while it commits", held, maxCompletionHold)
	}
	if outcomeEntries[0] != firstEntryFires {
		t.Fatalf("outcome entries %v: want the first entry's %d outcomes together", outcomeEntries, firstEntryFires)
	}
}
