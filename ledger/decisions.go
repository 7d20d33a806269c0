package ledger

import (
	"fmt"
	"sync"
	"time"

	"github.com/raftcron/raftcron/fence"
)

// Outcome is what the service did with one delivery.
type Outcome string

const (
	OutcomeApplied    Outcome = "applied"     // written to the ledger
	OutcomeDuplicate  Outcome = "duplicate"   // the run was applied before: acknowledged, not written
	OutcomeStale      Outcome = "stale"       // a newer attempt was admitted: refused with 409
	OutcomeBad        Outcome = "bad_request" // headers or body unusable: refused with 4xx
	OutcomeUnverified Outcome = "unverified"  // signature missing or wrong (401), or meant for another job (403)
	OutcomeError      Outcome = "error"       // the store failed: nothing written
)

// Decision is one delivery and its outcome. Fields the request did not carry (a bad
// request's run) are left zero.
type Decision struct {
	Time        time.Time `json:"time"`
	Job         string    `json:"job,omitempty"`
	RunID       string    `json:"run_id,omitempty"`
	ScheduledAt time.Time `json:"scheduled_at,omitzero"`
	Token       uint64    `json:"token,omitempty"`
	Attempt     uint32    `json:"attempt,omitempty"`
	Outcome     Outcome   `json:"outcome"`
	Seq         uint64    `json:"seq,omitempty"`    // the entry written, if applied
	Detail      string    `json:"detail,omitempty"` // why it was refused
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// String is the line printed for each decision:
// time job scheduled_at token=N attempt=N outcome [detail].
func (d Decision) String() string {
	line := fmt.Sprintf("%s %s %s token=%s attempt=%s %s",
		d.Time.UTC().Format(timeFormat), orDash(d.Job), d.scheduledAt(),
		orDash(d.Token), orDash(d.Attempt), d.Outcome)
	if d.Seq != 0 {
		line += fmt.Sprintf(" seq=%d", d.Seq)
	}
	if d.Detail != "" {
		line += " (" + d.Detail + ")"
	}
	return line
}

func (d Decision) scheduledAt() string {
	if d.ScheduledAt.IsZero() {
		return "-"
	}
	return fence.FormatScheduledAt(d.ScheduledAt)
}

// orDash spells a missing value as "-", so that a line always has the same columns.
func orDash[T string | uint64 | uint32](v T) string {
	var zero T
	if v == zero {
		return "-"
	}
	return fmt.Sprint(v)
}

// DefaultDecisions is how many decisions a Server keeps.
const DefaultDecisions = 1000

// Decisions keeps the most recent decisions in memory. Safe for concurrent use.
type Decisions struct {
	// mu guards ring, next and full. ring[next] is the slot the next decision takes;
	// once full, it is also the oldest decision kept.
	mu   sync.Mutex
	ring []Decision
	next int
	full bool
}

// NewDecisions keeps the last capacity decisions (at least one).
func NewDecisions(capacity int) *Decisions {
	return &Decisions{ring: make([]Decision, max(capacity, 1))}
}

// Add keeps d, forgetting the oldest decision if the log is full.
func (l *Decisions) Add(d Decision) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = d
	l.next = (l.next + 1) % len(l.ring)
	if l.next == 0 {
		l.full = true
	}
}

// List returns the decisions kept, newest first.
func (l *Decisions) List() []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	list := make([]Decision, 0, n)
	for i := 1; i <= n; i++ {
		list = append(list, l.ring[(l.next-i+len(l.ring))%len(l.ring)])
	}
	return list
}
