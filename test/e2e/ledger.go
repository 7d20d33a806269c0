package e2e

import (
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// NodeLedger is one node's run ledger at the end of a scenario.
type NodeLedger struct {
	Node string `json:"node"`
	// Source: "data-dir" (the node's Raft log replayed offline) or "api"
	// (RunService.ListRuns with stale=true).
	Source string `json:"source"`
	// Index is the last log entry the ledger reflects; 0 when unknown.
	Index     uint64 `json:"index,omitempty"`
	StateHash string `json:"state_hash,omitempty"`
	Token     uint64 `json:"token,omitempty"` // the fencing counter
	Runs      []Run  `json:"runs"`
	// Fires are the accepted fires in log order (data-dir only): every
	// attempt ever committed, even those a history limit pruned since.
	Fires []LogFire `json:"fires,omitempty"`
	// FirstIndex is the first log entry replayed; entries before it came
	// from a snapshot and have no Fires.
	FirstIndex uint64 `json:"first_index,omitempty"`
}

// Run is a ledger run, as the checker needs it.
type Run struct {
	ID          string `json:"id"`
	Job         string `json:"job"`
	Generation  uint64 `json:"generation"`
	Slot        int64  `json:"slot_unix"`
	LastSlot    int64  `json:"last_slot_unix,omitempty"`
	MissedCount uint64 `json:"missed_count,omitempty"`
	Kind        string `json:"kind"`
	State       string `json:"state"`
	Reason      string `json:"reason,omitempty"`
	// CreatedAt and FinishedAt (0: not finished) are the leader's clock
	// when the run was committed and when its outcome was, in Unix ns.
	CreatedAt  int64        `json:"created_at_ns,omitempty"`
	FinishedAt int64        `json:"finished_at_ns,omitempty"`
	Attempts   []RunAttempt `json:"attempts,omitempty"`
	// Parents are the runs whose outcomes fired a chained run.
	Parents []ParentRef `json:"parents,omitempty"`
}

// ParentRef is a parent run as a chained run records it.
type ParentRef struct {
	Job   string `json:"job"`
	RunID string `json:"run_id"`
	Token uint64 `json:"token"`
}

// RunAttempt is one committed attempt of a run.
type RunAttempt struct {
	Number uint32 `json:"number"`
	Token  uint64 `json:"token"`
	Kind   string `json:"kind"`
	Node   string `json:"node"`
	Term   uint64 `json:"term"`
	State  string `json:"state"`
	// Dispatched is the committing leader's clock when it proposed the
	// attempt; Started and Finished are the executor's. Unix ns, 0: none.
	Dispatched int64 `json:"dispatched_ns,omitempty"`
	Started    int64 `json:"started_ns,omitempty"`
	Finished   int64 `json:"finished_ns,omitempty"`
}

// LogFire is an accepted fire at its place in the log.
type LogFire struct {
	Index  uint64 `json:"index"`
	Term   uint64 `json:"term"`
	Token  uint64 `json:"token"`
	RunID  string `json:"run_id"`
	Job    string `json:"job"`
	Slot   int64  `json:"slot_unix"`
	Number uint32 `json:"attempt"`
	Kind   string `json:"kind"`
	Node   string `json:"node"`
}

// Run states and kinds as the checker spells them (the proto enum names
// without their prefix).
const (
	StateDispatched = "DISPATCHED"
	StateRetrying   = "RETRYING"
	StateMissed     = "MISSED"
	StateSkipped    = "SKIPPED" // a calendar or a freeze stopped the slot on purpose
	ReasonOverlap   = "overlap_skipped"
	StateUnknown    = "UNKNOWN"
	KindManual      = "MANUAL"
	KindChained     = "CHAINED"
	KindRedispatch  = "REDISPATCH"
	StateSucceeded  = "SUCCEEDED"
)

func runFromProto(r *pb.Run) Run {
	out := Run{
		ID: r.GetId(), Job: r.GetJob(), Generation: r.GetGeneration(),
		Slot: r.GetSlotUnix(), LastSlot: r.GetLastSlotUnix(), MissedCount: r.GetMissedCount(),
		Kind: kindName(r.GetKind()), State: stateName(r.GetState()), Reason: r.GetReason(),
		CreatedAt: r.GetCreatedAtUnixNano(), FinishedAt: r.GetFinishedAtUnixNano(),
	}
	for _, p := range r.GetParents() {
		out.Parents = append(out.Parents, ParentRef{Job: p.GetJob(), RunID: p.GetRunId(), Token: p.GetToken()})
	}
	for _, a := range r.GetAttempts() {
		out.Attempts = append(out.Attempts, RunAttempt{
			Number: a.GetNumber(), Token: a.GetToken(), Kind: kindName(a.GetKind()),
			Node: a.GetNodeId(), Term: a.GetTerm(), State: stateName(a.GetState()),
			Dispatched: a.GetDispatchedAtUnixNano(), Started: a.GetStartedAtUnixNano(), Finished: a.GetFinishedAtUnixNano(),
		})
	}
	return out
}

func kindName(k pb.FireKind) string { return strings.TrimPrefix(k.String(), "FIRE_KIND_") }

func stateName(s pb.RunState) string { return strings.TrimPrefix(s.String(), "RUN_STATE_") }

// open reports whether the run still waits for an outcome.
func (r Run) open() bool { return r.State == StateDispatched || r.State == StateRetrying }
